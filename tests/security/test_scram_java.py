"""The Java Admin client (kafka-clients, as kafka-configs.sh uses it) manages SCRAM users on a kraftwire node over
SASL_SSL, and the Java client then logs in with a credential it created; deletion stops that login."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import anyio
import pytest

from tests.protocol.kafka_java import classpath, jar_dir, missing_reason

from .harness import USERS, secure_node

pytestmark = [pytest.mark.anyio, pytest.mark.java]
SOURCE = Path(__file__).with_name("java") / "ScramAdmin.java"


@pytest.fixture(scope="module")
def java_cp() -> str:
    why = missing_reason()
    if why is not None:
        print(f"skipping Java Admin SCRAM test: {why}")
        pytest.skip(why)
    lib = jar_dir()
    assert lib is not None
    jars = [str(p) for p in classpath(lib)]
    digest = hashlib.sha256(SOURCE.read_bytes() + "|".join(jars).encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"kraftwire-scram-admin-{digest}"
    if not (out / "ScramAdmin.class").exists():
        work = Path(tempfile.mkdtemp(prefix="kraftwire-scram-admin-build-"))
        proc = subprocess.run(["javac", "-nowarn", "-d", str(work), "-cp", os.pathsep.join(jars), str(SOURCE)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        try:
            os.replace(work, out)
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return os.pathsep.join([str(out), *jars])


def java_properties(path: Path, certs, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> str:
    path.write_text("\n".join([
        "security.protocol=SASL_SSL", f"sasl.mechanism={mechanism}",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";',
        "ssl.truststore.type=PEM", f"ssl.truststore.location={certs.ca}", "",
    ]))
    return str(path)


async def java(cp: str, bootstrap: str, props: str, *command: str) -> tuple[int, str]:
    argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "ScramAdmin", bootstrap, props, *command]
    proc = await anyio.to_thread.run_sync(lambda: subprocess.run(argv, capture_output=True, text=True, timeout=120))
    return proc.returncode, proc.stdout.strip()


async def test_java_admin_manages_scram_users(certs, tmp_path, java_cp):
    async with secure_node(certs) as sn:
        bootstrap = f"127.0.0.1:{sn.port('SASL_SSL')}"
        admin = java_properties(tmp_path / "admin.properties", certs, "admin", USERS["admin"])
        ivy = java_properties(tmp_path / "ivy.properties", certs, "ivy", "ivy-secret", "SCRAM-SHA-256")

        code, out = await java(java_cp, bootstrap, ivy, "cluster")
        assert code == 1 and "SaslAuthenticationException" in out, out
        code, out = await java(java_cp, bootstrap, admin, "upsert", "ivy", "SCRAM-SHA-256", "8192", "ivy-secret")
        assert (code, out) == (0, "OK"), out
        cred = sn.node.voter.controller.controller.committed_image.scram[("ivy", 1)]
        assert cred.iterations == 8192 and len(cred.salt) > 0
        code, out = await java(java_cp, bootstrap, admin, "describe")
        assert code == 0 and "ivy SCRAM-SHA-256:8192" in out.splitlines(), out

        # the Java client logs in with the credential it created
        code, out = await java(java_cp, bootstrap, ivy, "cluster")
        assert (code, out) == (0, "NODES 1"), out
        # ivy may not manage credentials
        code, out = await java(java_cp, bootstrap, ivy, "upsert", "ivy", "SCRAM-SHA-512", "4096", "x")
        assert code == 1 and "ClusterAuthorizationException" in out, out
        code, out = await java(java_cp, bootstrap, admin, "upsert", "jo", "SCRAM-SHA-256", "1024", "jo-secret")
        assert code == 1 and "UnacceptableCredentialException" in out and "Too few iterations" in out, out

        code, out = await java(java_cp, bootstrap, admin, "delete", "ivy", "SCRAM-SHA-256")
        assert (code, out) == (0, "OK"), out
        code, out = await java(java_cp, bootstrap, ivy, "cluster")
        assert code == 1 and "SaslAuthenticationException" in out, out
        code, out = await java(java_cp, bootstrap, admin, "delete", "ivy", "SCRAM-SHA-256")
        assert code == 1 and "ResourceNotFoundException" in out, out
