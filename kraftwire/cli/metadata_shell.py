"""``kraftwire metadata-shell``: browse the metadata image as a file tree, like kafka-metadata-shell.

The image is rebuilt by replaying records through ``QuorumController`` (standby replay): from a
snapshot file, from a log directory (latest snapshot plus the segments after it, read-only), or —
beyond Kafka — live, by fetching the committed ``__cluster_metadata`` log from a controller over
the Kafka protocol (a kraftwire node or a Kafka controller: ``cli/live_metadata.py``). The tree (see docs/storage.md):

    /features/<name>                          finalized level
    /cluster/brokers/<id>/<field>             registration fields
    /cluster/controllers/<id>/<field>
    /topics/<name>/id                         topic id (Kafka's base64 form)
    /topics/<name>/<partition>/<field>        replicas, isr, leader, epochs, ...
    /topicIds/<id>                            topic name
    /configs/<TYPE>/<resource>/<key>          value (<default> names the default resource)
    /acls/<id>                                one line describing the ACL
    /clientQuotas/<entity>/<key>              value
    /producerIds/nextProducerId
    /scram/<mechanism>/<user>                 iterations (keys are not shown)
    /provenance/<field>                       where the image came from and up to which offset

Commands: ls, cd, cat, tree, find, pwd, refresh, watch, history, help, exit (paths may use * and ?
globs). On a terminal the shell keeps a readline history (``~/.kraftwire_metadata_shell_history``) and
Tab completes commands and paths. ``refresh`` re-reads the source (the live log, or the log directory
of a running node); ``watch [-n SECONDS] [-c COUNT] COMMAND...`` re-runs a command on the refreshed
image and prints its output whenever it changes; ``--follow SECONDS`` does the same for a one-shot
command. The exit status is that of the one-shot command (or of the last command read from stdin).
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import os
import shlex
import sys
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.metadata import ImageLoader, MetadataImage
from kraftwire.metadata.image import MetadataReplayError
from kraftwire.net.client import RequestFailed
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.storage import StorageError
from kraftwire.storage.reader import MetadataSource, read_metadata

Tree = dict[str, Any]  # a directory: name -> Tree or str (a file)

SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
CONFIG_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                  6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
              8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
              12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}
DEFAULT_NAME = "<default>"


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's textual Uuid: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _list(items: Any) -> str:
    return "[" + ", ".join(str(kafka_uuid(i) if isinstance(i, uuid.UUID) else i) for i in items) + "]"


def _name(value: str | None) -> str:
    return DEFAULT_NAME if not value else value.replace("/", "%2F")


def _endpoints(endpoints: Any) -> str:
    """``NAME://host:port``, with the security protocol added when the name does not say it."""
    out = []
    for e in endpoints:
        proto = SECURITY_PROTOCOLS.get(e.security_protocol, str(e.security_protocol))
        out.append(f"{e.name}://{e.host}:{e.port}" + ("" if proto == e.name else f" ({proto})"))
    return ", ".join(out)


# -- image -> tree --------------------------------------------------------------------------------------
def image_tree(image: MetadataImage, provenance: dict[str, str]) -> Tree:
    brokers = {str(b.id): {
        "id": str(b.id), "epoch": str(b.epoch), "incarnationId": kafka_uuid(b.incarnation_id),
        "listeners": _endpoints(b.listeners),
        "supportedFeatures": ", ".join(f"{n}: {lo}-{hi}" for n, lo, hi in b.features),
        "rack": b.rack or "null", "fenced": str(b.fenced).lower(),
        "inControlledShutdown": str(b.in_controlled_shutdown).lower(),
        "isMigratingZkBroker": str(b.is_migrating_zk_broker).lower(), "directories": _list(b.directories),
    } for b in image.brokers.values()}
    controllers = {str(c.id): {
        "id": str(c.id), "incarnationId": kafka_uuid(c.incarnation_id),
        "listeners": _endpoints(c.listeners),
        "supportedFeatures": ", ".join(f"{n}: {lo}-{hi}" for n, lo, hi in c.features),
        "zkMigrationReady": str(c.zk_migration_ready).lower(),
    } for c in image.controllers.values()}
    topics: Tree = {}
    for t in image.topics.values():
        node: Tree = {"id": kafka_uuid(t.id)}
        for pid, p in t.partitions.items():
            node[str(pid)] = {
                "replicas": _list(p.replicas), "isr": _list(p.isr), "leader": str(p.leader),
                "leaderEpoch": str(p.leader_epoch), "partitionEpoch": str(p.partition_epoch),
                "removingReplicas": _list(p.removing_replicas), "addingReplicas": _list(p.adding_replicas),
                "leaderRecoveryState": RECOVERY_STATES.get(p.leader_recovery_state,
                                                           str(p.leader_recovery_state)),
                "directories": _list(p.directories), "eligibleLeaderReplicas": _list(p.elr),
                "lastKnownElr": _list(p.last_known_elr),
            }
        topics[_name(t.name)] = node
    configs: Tree = {}
    for (rtype, rname), kv in image.configs.items():
        configs.setdefault(CONFIG_TYPES.get(rtype, str(rtype)), {})[_name(rname)] = dict(kv)
    quotas = {",".join(f"{t}={_name(n)}" for t, n in entity): {k: repr(v) if not float(v).is_integer() else
                                                                 str(int(v)) for k, v in kv.items()}
              for entity, kv in image.quotas.items()}
    acls = {kafka_uuid(aid): (
        f"resourceType={RESOURCE_TYPES.get(a.resource_type, a.resource_type)} resourceName={a.resource_name} "
        f"patternType={PATTERN_TYPES.get(a.pattern_type, a.pattern_type)} principal={a.principal} "
        f"host={a.host} operation={OPERATIONS.get(a.operation, a.operation)} "
        f"permissionType={PERMISSIONS.get(a.permission_type, a.permission_type)}")
        for aid, a in image.acls.items()}
    scram: Tree = {}
    for (user, mech), cred in image.scram.items():
        by_user = scram.setdefault(SCRAM_MECHANISMS.get(mech, str(mech)), {})
        by_user[_name(user)] = f"iterations={cred.iterations}"
    return {
        "features": {n: str(v) for n, v in image.features.items()},
        "cluster": {"brokers": brokers, "controllers": controllers},
        "topics": topics,
        "topicIds": {kafka_uuid(t.id): t.name for t in image.topics.values()},
        "configs": configs,
        "acls": acls,
        "clientQuotas": quotas,
        "producerIds": {"nextProducerId": str(image.next_producer_id)},
        "scram": scram,
        "provenance": provenance,
    }


def build_image(src: MetadataSource) -> MetadataImage:
    """Replay a source (snapshot first, then the log records after it) into an image; a large one shows a
    progress bar on a terminal."""
    from kraftwire.cli.progress import bar

    loader = ImageLoader()
    with bar(total=len(src.snapshot) + len(src.records), desc="replay", unit="rec") as progress:
        for i, r in enumerate(src.snapshot, 1):
            loader.replay(r)
            if i % 4096 == 0:
                progress.update(4096)
        for i, (_offset, record) in enumerate(src.records, 1):
            loader.replay(record)
            if i % 4096 == 0:
                progress.update(4096)
    return loader.image


def provenance(src: MetadataSource) -> dict[str, str]:
    sid = src.snapshot_id
    return {"source": src.source,
            "snapshot": f"{sid.end_offset:020d}-{sid.epoch:010d}" if sid else "none",
            "lastContainedOffset": str(src.last_offset), "lastContainedEpoch": str(src.last_epoch),
            "logRecordsReplayed": str(len(src.records))}


# -- the shell ------------------------------------------------------------------------------------------
def _sort_key(name: str) -> tuple[int, int, str]:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


class Shell:
    """ls/cd/cat/tree/find/pwd over a ``Tree``; output to ``out``, complaints to ``err``.

    ``reload`` (optional) returns a fresh tree from the source, for ``refresh`` and ``watch``;
    ``failed`` is the status of the last command run.
    """

    def __init__(self, tree: Tree, out: TextIO | None = None, err: TextIO | None = None,
                 reload: Callable[[], Tree] | None = None, sleep: Callable[[float], None] | None = None) -> None:
        import time

        self.root = tree
        self.cwd: list[str] = []
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.failed = False
        self.reload = reload
        self.sleep = sleep or time.sleep
        self.commands: dict[str, Callable[[list[str]], None]] = {
            "ls": self.ls, "cd": self.cd, "cat": self.cat, "tree": self.tree, "find": self.find,
            "pwd": self.pwd, "help": self.help, "refresh": self.refresh, "watch": self.watch,
            "history": self.history,
        }

    # -- paths -----------------------------------------------------------------------------------
    def _node(self, parts: list[str]) -> Any:
        node: Any = self.root
        for p in parts:
            if not isinstance(node, dict) or p not in node:
                return None
            node = node[p]
        return node

    def resolve(self, path: str) -> list[list[str]]:
        """Absolute component lists matching ``path`` (relative to the cwd, with globs)."""
        found = [[] if path.startswith("/") else list(self.cwd)]
        for comp in (c for c in path.split("/") if c):
            nxt: list[list[str]] = []
            for parts in found:
                if comp == ".":
                    nxt.append(parts)
                elif comp == "..":
                    nxt.append(parts[:-1])
                elif any(ch in comp for ch in "*?["):
                    node = self._node(parts)
                    if isinstance(node, dict):
                        names = sorted(node, key=_sort_key)
                        nxt += [parts + [n] for n in names if fnmatch.fnmatchcase(n, comp)]
                else:
                    nxt.append(parts + [comp])
            found = nxt
        return [p for p in found if self._node(p) is not None]

    def _targets(self, cmd: str, args: list[str], default: str = ".") -> list[list[str]]:
        out: list[list[str]] = []
        for a in args or [default]:
            hits = self.resolve(a)
            if not hits:
                self._fail(f"{cmd}: {a}: no such file or directory")
            out += hits
        return out

    def _fail(self, message: str) -> None:
        self.failed = True
        print(message, file=self.err)

    @staticmethod
    def _path(parts: list[str]) -> str:
        return "/" + "/".join(parts)

    # -- commands --------------------------------------------------------------------------------
    def ls(self, args: list[str]) -> None:
        targets = self._targets("ls", args)
        for i, parts in enumerate(targets):
            node = self._node(parts)
            if not isinstance(node, dict):
                print(parts[-1] if parts else "/", file=self.out)
                continue
            if len(targets) > 1:
                print(("\n" if i else "") + self._path(parts) + ":", file=self.out)
            for name in sorted(node, key=_sort_key):
                print(name, file=self.out)

    def cd(self, args: list[str]) -> None:
        if len(args) > 1:
            return self._fail("cd: too many arguments")
        hits = self.resolve(args[0] if args else "/")
        if len(hits) != 1:
            return self._fail(f"cd: {args[0]}: " + ("no such directory" if not hits else "ambiguous"))
        if not isinstance(self._node(hits[0]), dict):
            return self._fail(f"cd: {args[0]}: not a directory")
        self.cwd = hits[0]

    def cat(self, args: list[str]) -> None:
        if not args:
            return self._fail("cat: a path is required")
        for parts in self._targets("cat", args):
            node = self._node(parts)
            if isinstance(node, dict):
                self._fail(f"cat: {self._path(parts)}: is a directory")
            else:
                print(node, file=self.out)

    def tree(self, args: list[str]) -> None:
        for parts in self._targets("tree", args):
            node = self._node(parts)
            name = parts[-1] if parts else "/"
            if isinstance(node, dict):
                print(f"{name}:", file=self.out)
                self._tree(node, "  ")
            else:
                print(f"{name}: {node}", file=self.out)

    def _tree(self, node: Tree, indent: str) -> None:
        for name in sorted(node, key=_sort_key):
            child = node[name]
            if isinstance(child, dict):
                print(f"{indent}{name}:", file=self.out)
                self._tree(child, indent + "  ")
            else:
                print(f"{indent}{name}: {child}", file=self.out)

    def find(self, args: list[str]) -> None:
        for parts in self._targets("find", args):
            self._find(parts)

    def _find(self, parts: list[str]) -> None:
        print(self._path(parts), file=self.out)
        node = self._node(parts)
        if isinstance(node, dict):
            for name in sorted(node, key=_sort_key):
                self._find(parts + [name])

    def pwd(self, args: list[str]) -> None:
        print(self._path(self.cwd), file=self.out)

    def refresh(self, args: list[str]) -> None:
        if self.reload is None:
            return self._fail("refresh: this source cannot be re-read")
        try:
            tree = self.reload()
        except Exception as e:  # noqa: BLE001 - the source went away: report, keep the old image
            return self._fail(f"refresh: {e or type(e).__name__}")
        self.root = tree
        while self.cwd and self._node(self.cwd) is None:   # the directory may be gone
            self.cwd = self.cwd[:-1]

    def watch(self, args: list[str]) -> None:
        """``watch [-n SECONDS] [-c COUNT] COMMAND...``: refresh and re-run, printing changed output."""
        interval, count = 2.0, 0
        while args and args[0] in ("-n", "-c") and len(args) > 1:
            try:
                if args[0] == "-n":
                    interval = float(args[1])
                else:
                    count = int(args[1])
            except ValueError:
                return self._fail(f"watch: {args[0]} expects a number, got {args[1]!r}")
            args = args[2:]
        if not args or args[0] in ("watch", "exit", "quit"):
            return self._fail("watch: usage: watch [-n SECONDS] [-c COUNT] COMMAND...")
        if self.reload is None:
            return self._fail("watch: this source cannot be re-read")
        line, last, runs = shlex.join(args), None, 0
        real_out = self.out
        try:
            while True:
                if runs:
                    self.sleep(interval)
                    self.refresh([])
                import io

                self.out = io.StringIO()
                self.run_line(line)
                text, self.out = self.out.getvalue(), real_out
                if text != last:
                    prov = self.root.get("provenance", {}) if isinstance(self.root, dict) else {}
                    print(f"--- {line} at offset {prov.get('lastContainedOffset', '?')} ---", file=self.out)
                    print(text, end="", file=self.out, flush=True)
                    last = text
                runs += 1
                if count and runs >= count:
                    return
        except KeyboardInterrupt:
            self.out = real_out
            print("", file=self.out)

    def history(self, args: list[str]) -> None:
        try:
            import readline
        except ImportError:
            return self._fail("history: readline is not available")
        for i in range(1, readline.get_current_history_length() + 1):
            print(f"{i:5d}  {readline.get_history_item(i)}", file=self.out)

    def help(self, args: list[str]) -> None:
        print("Commands:\n"
              "  ls [PATH...]      list a directory (or name a file)\n"
              "  cd [PATH]         change directory (default /)\n"
              "  cat PATH...       print files\n"
              "  tree [PATH...]    print a subtree with file contents\n"
              "  find [PATH...]    print every path below\n"
              "  pwd               print the current directory\n"
              "  refresh           re-read the source (live log or log directory)\n"
              "  watch [-n S] [-c N] COMMAND...  refresh every S seconds, print COMMAND's output on change\n"
              "  history           commands typed so far (Up/Down and Tab complete on a terminal)\n"
              "  help              this text\n"
              "  exit              leave the shell\n"
              "Paths are absolute or relative, may use . and .., and * ? [..] globs.", file=self.out)

    def complete(self, text: str, line: str) -> list[str]:
        """Tab completion candidates for the word ``text`` of ``line``: commands first, then paths."""
        words = line.split()
        if not words or (len(words) == 1 and not line.endswith(" ")):
            return sorted(c + " " for c in [*self.commands, "exit"] if c.startswith(text))
        head, _, stem = text.rpartition("/")
        base = head + "/" if text.startswith("/") or head else ""
        parts = self.resolve(head or ("/" if text.startswith("/") else "."))
        node = self._node(parts[0]) if len(parts) == 1 else None
        if not isinstance(node, dict):
            return []
        out = []
        for name in sorted(node, key=_sort_key):
            if name.startswith(stem):
                out.append(base + name + ("/" if isinstance(node[name], dict) else " "))
        return out

    def run_line(self, line: str) -> bool:
        """Run one command line; False when the shell should exit. ``failed`` tells how it went."""
        self.failed = False
        try:
            words = shlex.split(line)
        except ValueError as e:
            self._fail(f"syntax error: {e}")
            return True
        if not words:
            return True
        cmd, args = words[0], words[1:]
        if cmd in ("exit", "quit"):
            return False
        fn = self.commands.get(cmd)
        if fn is None:
            self._fail(f"{cmd}: unknown command (try help)")
        else:
            fn(args)
        return True

    def interact(self, stdin: TextIO) -> None:
        prompt = stdin.isatty()
        if prompt and stdin is sys.stdin:
            return self._interact_readline()
        while True:
            if prompt:
                print(f"[ kraftwire metadata shell ] {self._path(self.cwd)} >> ", end="", file=self.out,
                      flush=True)
            line = stdin.readline()
            if not line or not self.run_line(line):
                return


    def _interact_readline(self) -> None:
        """A terminal session: readline editing, persistent history, Tab completion."""
        try:
            import readline
        except ImportError:     # no readline on this platform: plain lines
            readline = None
        history = os.path.expanduser("~/.kraftwire_metadata_shell_history")
        if readline is not None:
            try:
                readline.read_history_file(history)
            except OSError:
                pass
            readline.set_history_length(1000)
            readline.set_completer_delims(" \t\n")
            matches: list[str] = []

            def completer(text: str, state: int) -> str | None:
                nonlocal matches
                if state == 0:
                    matches = self.complete(text, readline.get_line_buffer())
                return matches[state] if state < len(matches) else None

            readline.set_completer(completer)
            readline.parse_and_bind("tab: complete")
        try:
            while True:
                try:
                    line = input(f"[ kraftwire metadata shell ] {self._path(self.cwd)} >> ")
                except EOFError:
                    print("", file=self.out)
                    return
                except KeyboardInterrupt:
                    print("", file=self.out)
                    continue
                if not self.run_line(line):
                    return
        finally:
            if readline is not None:
                try:
                    readline.write_history_file(history)
                except OSError:
                    pass


# -- sources --------------------------------------------------------------------------------------------
def load_live(addr: str, timeout: float, security: Any = None) -> MetadataSource:
    """The committed ``__cluster_metadata`` log of the quorum ``addr`` belongs to (``cli/live_metadata.py``:
    as a consumer from a kraftwire node, as a Raft observer from a Kafka controller); ``security`` is a
    ClientSecurity (from ``--command-config``) or None for plaintext."""
    import anyio

    from kraftwire.cli.live_metadata import fetch_live

    return anyio.run(fetch_live, addr, timeout, security)


# -- CLI ------------------------------------------------------------------------------------------------
def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metadata-shell", help="browse the metadata image (snapshot, log directory or live controller)",
        description="Rebuild the metadata image and browse it as a tree with ls/cd/cat/tree/find. "
                    "Without a trailing command, commands are read from stdin (interactive on a terminal).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--snapshot", metavar="PATH",
                     help="a .checkpoint snapshot file, a .log segment, or a (metadata) log directory")
    src.add_argument("--bootstrap-controller", "--bootstrap-server", dest="bootstrap", metavar="HOST:PORT",
                     help="fetch the committed __cluster_metadata log from this controller (live view)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds allowed for the live fetch")
    at = p.add_mutually_exclusive_group()
    at.add_argument("--at-offset", metavar="N", help="the image as of log offset N (inclusive): the newest "
                    "snapshot at or below it plus the log's records up to it")
    at.add_argument("--at-time", metavar="T", help="the image as of time T (ISO-8601 or epoch ms): up to the "
                    "last batch appended at or before it")
    p.add_argument("--follow", type=float, default=None, metavar="SECONDS",
                   help="with a one-shot command: re-read the source every SECONDS and print the command's "
                        "output whenever it changes (Ctrl-C stops)")
    p.add_argument("--count", type=int, default=0, help="with --follow: stop after this many runs")
    p.add_argument("--command-config", metavar="FILE",
                   help="Kafka client properties for the live fetch (security.protocol, ssl.*, sasl.*)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="one command to run, e.g. ls /topics")
    p.set_defaults(func=run)


def load_source(snapshot: str | None, bootstrap: str | None, timeout: float, security: Any = None,
                point: Any = None) -> MetadataSource:
    """The records of a file/log directory or of the first answering controller of ``bootstrap``,
    as of ``point`` (a ``time_travel.Point``) when given."""
    from kraftwire.cli import time_travel

    if snapshot is not None:
        if not os.path.exists(snapshot):
            raise OperatorError(f"{snapshot}: no such file or directory", ExitCode.USAGE)
        return read_metadata(snapshot) if point is None else time_travel.read_at(snapshot, point)
    from kraftwire.cli.bootstrap import parse_bootstrap

    addresses = parse_bootstrap(bootstrap or "", "--bootstrap-controller")
    for i, (host, port) in enumerate(addresses):   # the first node that answers
        try:
            src = load_live(f"{host}:{port}", timeout, security)
            break
        except (RequestFailed, OSError, TimeoutError):
            if i == len(addresses) - 1:
                raise
    return src if point is None else time_travel.live_at(src, point)


def point_of(args: argparse.Namespace) -> Any:
    """The ``--at-offset``/``--at-time`` point asked for, or None."""
    from kraftwire.cli import time_travel

    if args.at_offset is not None:
        return time_travel.Point(offset=time_travel.parse_offset(args.at_offset))
    if args.at_time is not None:
        return time_travel.Point(time_ms=time_travel.parse_time(args.at_time))
    return None


def run(args: argparse.Namespace) -> int:
    security = None
    if args.bootstrap:
        from kraftwire.cli.client_config import command_security

        security = command_security(args.command_config)
    point = point_of(args)

    def load(warn: bool = False) -> Tree:
        try:
            src = load_source(args.snapshot, args.bootstrap, args.timeout, security, point)
            if warn:
                for w in src.warnings:
                    print(f"warning: {w}", file=sys.stderr)
            return image_tree(build_image(src), provenance(src))
        except (MetadataReplayError, KafkaProtocolError) as e:
            raise StorageError(f"cannot rebuild the image: {e or type(e).__name__}") from None

    shell = Shell(load(warn=True), reload=load)
    if args.command:
        line = shlex.join(args.command)
        if args.follow is not None:
            shell.watch(["-n", str(args.follow), "-c", str(args.count), *args.command])
        else:
            shell.run_line(line)
    else:
        if args.follow is not None:
            raise OperatorError("--follow needs a one-shot command, e.g. --follow 2 ls /brokers", ExitCode.USAGE)
        shell.interact(sys.stdin)
    return ExitCode.FAILED if shell.failed else 0
