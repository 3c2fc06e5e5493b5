"""Compile and run tests/protocol/java/Golden.java against the kafka-clients jar, once per session.

The jars come from the PyPI package ``shigawire-apache-flink-libraries`` (pyflink/lib/). Compiled
classes are cached in the temp directory under a digest of the source and the jars, so only the
first session on a machine pays for javac.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("java") / "Golden.java"
REQUIRED = ("kafka-clients.jar", "slf4j-api.jar")
OPTIONAL = ("lz4-java.jar", "snappy-java.jar", "zstd-jni.jar")  # compression codecs for record batches


def jar_dir() -> Path | None:
    """pyflink/lib of the installed shigawire-apache-flink-libraries, if present."""
    try:
        dist = importlib.metadata.distribution("shigawire-apache-flink-libraries")
        lib = Path(str(dist.locate_file("pyflink/lib")))
        if (lib / REQUIRED[0]).exists():
            return lib
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec("pyflink")
    for base in (spec.submodule_search_locations or []) if spec else []:
        lib = Path(base) / "lib"
        if (lib / REQUIRED[0]).exists():
            return lib
    return None


def missing_reason() -> str | None:
    """Why the golden run cannot happen here, or None when it can."""
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH (install a JDK 17)"
    lib = jar_dir()
    if lib is None:
        return "kafka-clients.jar not found (pip install shigawire-apache-flink-libraries)"
    for jar in REQUIRED:
        if not (lib / jar).exists():
            return f"{jar} missing from {lib}"
    return None


def classpath(lib: Path) -> list[Path]:
    return [lib / j for j in REQUIRED + OPTIONAL if (lib / j).exists()]


def compiled_dir(lib: Path) -> Path:
    """Directory holding Golden.class, compiling it if this source/jar combination is new."""
    h = hashlib.sha256(SOURCE.read_bytes())
    for jar in classpath(lib):
        h.update(f"{jar}:{jar.stat().st_size}:{jar.stat().st_mtime_ns}".encode())
    out = Path(tempfile.gettempdir()) / f"kraftwire-golden-{h.hexdigest()[:16]}"
    if (out / "Golden.class").exists():
        return out
    work = Path(tempfile.mkdtemp(prefix="kraftwire-golden-build-"))
    cp = os.pathsep.join(str(p) for p in classpath(lib))
    proc = subprocess.run(["javac", "-nowarn", "-d", str(work), "-cp", cp, str(SOURCE)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"javac failed:\n{proc.stderr}")
    try:
        os.replace(work, out)
    except OSError:  # another session won the race; its classes are identical
        shutil.rmtree(work, ignore_errors=True)
    return out


def run_golden() -> dict[str, bytes | str]:
    """Case id -> bytes Kafka wrote (or a str naming why Java could not build that case)."""
    lib = jar_dir()
    assert lib is not None
    classes = compiled_dir(lib)
    cp = os.pathsep.join([str(classes)] + [str(p) for p in classpath(lib)])
    proc = subprocess.run(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "Golden"],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"Golden.java failed:\n{proc.stderr}")
    cases: dict[str, bytes | str] = {}
    for line in proc.stdout.splitlines():
        case, _, data = line.partition(" ")
        if data.startswith("!"):
            cases[case] = data[1:]
        else:
            cases[case] = b"" if data == "-" else bytes.fromhex(data)
    return cases
