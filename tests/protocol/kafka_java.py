"""Compile and run tests/protocol/java/Golden*.java against Kafka's jars, once per session.

Golden.java runs against kafka-clients 3.9.1 from the PyPI package ``shigawire-apache-flink-libraries``
(pyflink/lib/); Golden41.java against Kafka 4.1.0's own kafka-clients and kafka-metadata jars (the
4.1 distribution compat/kafka.py finds: KAFKA_HOME, KRAFTWIRE_KAFKA_DISTS or ../shared/kafka). Compiled
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
SOURCE_41 = Path(__file__).with_name("java") / "Golden41.java"
REQUIRED_41 = ("kafka-clients-4.1.0.jar", "kafka-metadata-4.1.0.jar", "kafka-server-common-4.1.0.jar")
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


def compiled_dir(lib: Path, source: Path = SOURCE, jars: list[Path] | None = None) -> Path:
    """Directory holding the source's class, compiling it if this source/jar combination is new."""
    jars = classpath(lib) if jars is None else jars
    h = hashlib.sha256(source.read_bytes())
    for jar in jars:
        h.update(f"{jar}:{jar.stat().st_size}:{jar.stat().st_mtime_ns}".encode())
    out = Path(tempfile.gettempdir()) / f"kraftwire-golden-{h.hexdigest()[:16]}"
    if (out / f"{source.stem}.class").exists():
        return out
    work = Path(tempfile.mkdtemp(prefix="kraftwire-golden-build-"))
    cp = os.pathsep.join(str(p) for p in jars)
    proc = subprocess.run(["javac", "-nowarn", "-d", str(work), "-cp", cp, str(source)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"javac failed:\n{proc.stderr}")
    try:
        os.replace(work, out)
    except OSError:  # another session won the race; its classes are identical
        shutil.rmtree(work, ignore_errors=True)
    return out


def kafka41_libs() -> Path | None:
    """libs/ of the Kafka 4.1 distribution the interop harness finds, if any."""
    from compat.kafka import KafkaUnavailable, find_distributions

    try:
        dists = find_distributions()
    except KafkaUnavailable:
        return None
    for d in dists:
        if d.version_tuple[:2] == (4, 1) and all((d.home / "libs" / j).exists() for j in REQUIRED_41):
            return d.home / "libs"
    return None


def missing_41_reason() -> str | None:
    """Why the Kafka 4.1 golden run cannot happen here, or None when it can."""
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH (install a JDK 17)"
    if kafka41_libs() is None:
        return ("no Apache Kafka 4.1 distribution with " + ", ".join(REQUIRED_41)
                + " (set KAFKA_HOME or KRAFTWIRE_KAFKA_DISTS, or put it under ../shared/kafka)")
    return None


def run_golden() -> dict[str, bytes | str]:
    """Case id -> bytes Kafka 3.9 wrote (or a str naming why Java could not build that case)."""
    lib = jar_dir()
    assert lib is not None
    return _run(SOURCE, classpath(lib), lib)


def run_golden_41() -> dict[str, bytes | str]:
    """Case id -> bytes Kafka 4.1 wrote."""
    lib = kafka41_libs()
    assert lib is not None
    jars = [lib / j for j in REQUIRED_41] + sorted(lib.glob("slf4j-api-*.jar"))
    return _run(SOURCE_41, jars, lib)


def _run(source: Path, jars: list[Path], lib: Path) -> dict[str, bytes | str]:
    classes = compiled_dir(lib, source, jars)
    cp = os.pathsep.join([str(classes)] + [str(p) for p in jars])
    proc = subprocess.run(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, source.stem],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{source.name} failed:\n{proc.stderr}")
    cases: dict[str, bytes | str] = {}
    for line in proc.stdout.splitlines():
        case, _, data = line.partition(" ")
        if data.startswith("!"):
            cases[case] = data[1:]
        else:
            cases[case] = b"" if data == "-" else bytes.fromhex(data)
    return cases
