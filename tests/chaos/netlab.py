"""Network namespaces and tmpfs for the chaos lab (root only).

Every node runs in its own namespace with one veth leg on a bridge in the root namespace, so the lab
(and its clients) reach every node directly while nodes reach each other only through their legs.
A partition drops packets silently: the sender's namespace gets a permanent neighbour entry that maps
the peer's address to a MAC nobody owns, so its frames vanish on the bridge (no iptables, no tc
modules needed) — ``block(a, b)`` is one-way (a's packets to b vanish), a full partition blocks both
directions; established connections stall exactly as with a pulled cable. Data directories are
small tmpfs mounts, so a "full disk" fills one node's disk without touching the host's.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import subprocess
from pathlib import Path


def lab_available() -> str | None:
    """None when namespaces, tc and tmpfs can be used here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "the chaos lab needs root (network namespaces, tmpfs mounts)"
    for tool in ("ip", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install iproute2 mount)"
    return None


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {out.stderr.strip()}")
    return out


_NOWHERE = "02:00:00:00:de:ad"   # a locally administered MAC no interface on the bridge has


class NetLab:
    """A bridge, one namespace per node, partitions between them; ``close()`` removes all of it."""

    def __init__(self, nodes: list[int]) -> None:
        used = _run("ip", "-o", "-4", "addr").stdout
        for _ in range(100):
            self.tag = random.randint(1, 250)
            if f"10.213.{self.tag}." not in used and not Path(f"/run/netns/kw{self.tag}n1").exists():
                break
        self.prefix = f"10.213.{self.tag}"
        self.bridge = f"kwb{self.tag}"
        self.nodes = list(nodes)
        self.blocked: set[tuple[int, int]] = set()
        self._created: list[int] = []
        try:
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{self.prefix}.254/24", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
            for n in nodes:
                self._add_node(n)
        except BaseException:
            self.close()
            raise

    def ns(self, node: int) -> str:
        return f"kw{self.tag}n{node}"

    def host(self, node: int) -> str:
        return f"{self.prefix}.{node}"

    def _add_node(self, n: int) -> None:
        ns, leg = self.ns(n), f"kw{self.tag}v{n}"
        _run("ip", "netns", "add", ns)
        self._created.append(n)
        _run("ip", "link", "add", leg, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _run("ip", "link", "set", leg, "master", self.bridge, "up")
        _run("ip", "-n", ns, "addr", "add", f"{self.host(n)}/24", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")

    def wrap(self, node: int, argv: list[str]) -> list[str]:
        """``argv`` run inside the node's namespace."""
        return ["ip", "netns", "exec", self.ns(node), *argv]

    # -- partitions ------------------------------------------------------------------------------
    def block(self, src: int, dst: int) -> None:
        self.blocked.add((src, dst))
        self._apply(src)

    def isolate(self, node: int, one_way: bool = False) -> None:
        """Cut ``node`` off from every other node (only its outgoing packets when ``one_way``)."""
        for other in self.nodes:
            if other != node:
                self.blocked.add((node, other))
                if not one_way:
                    self.blocked.add((other, node))
        for n in self.nodes:
            self._apply(n)

    def split(self, side: list[int]) -> None:
        """Two sides that cannot reach each other: ``side`` and the rest."""
        for a in side:
            for b in self.nodes:
                if b not in side:
                    self.blocked |= {(a, b), (b, a)}
        for n in self.nodes:
            self._apply(n)

    def heal(self) -> None:
        self.blocked.clear()
        for n in self.nodes:
            self._apply(n)

    def _apply(self, src: int) -> None:
        ns = self.ns(src)
        for d in self.nodes:
            if d == src:
                continue
            if (src, d) in self.blocked:
                _run("ip", "-n", ns, "neigh", "replace", self.host(d), "lladdr", _NOWHERE, "nud", "permanent",
                     "dev", "eth0")
            else:
                _run("ip", "-n", ns, "neigh", "del", self.host(d), "dev", "eth0", check=False)

    def close(self) -> None:
        for n in self._created:
            _run("ip", "netns", "del", self.ns(n), check=False)
            _run("ip", "link", "del", f"kw{self.tag}v{n}", check=False)
        self._created.clear()
        _run("ip", "link", "del", self.bridge, check=False)


class Disk:
    """A tmpfs of ``size_mb`` at ``path``; ``fill()`` leaves no free byte, ``free()`` undoes it."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        _run("mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path))
        self.filler = path / ".chaos-filler"

    def fill(self) -> int:
        """Write until ENOSPC; the number of bytes written."""
        written = 0
        chunk = b"\0" * (1 << 20)
        with open(self.filler, "ab", buffering=0) as f:
            while chunk:
                try:
                    written += f.write(chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    chunk = chunk[: len(chunk) // 2]
        return written

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def close(self) -> None:
        _run("umount", "-l", str(self.path), check=False)
