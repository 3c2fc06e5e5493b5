"""`kraftwire storage format --add-scram` writes UserScramCredentialRecords into the bootstrap checkpoint, and a
real `kraftwire server` process authenticates real clients against them."""

from __future__ import annotations

import base64
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from kraftwire.node.bootstrap import read_bootstrap
from kraftwire.security.credentials import ScramArgumentError, parse_add_scram
from kraftwire.security.scram import SHA256, SHA512, ScramClient, ScramServer
from kraftwire.storage.meta_properties import random_uuid
from tests.node.harness import free_ports


def test_parse_add_scram_matches_kafka_forms():
    rec = parse_add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret]").message
    assert (rec.name, rec.mechanism, rec.iterations, len(rec.salt)) == ("alice", 1, 4096, 32)
    salt = base64.b64encode(b"0123456789abcdef").decode()
    rec = parse_add_scram(f'SCRAM-SHA-512=[name="bob",iterations=8192,salt="{salt}",password="pw"]').message
    assert (rec.name, rec.mechanism, rec.iterations, rec.salt) == ("bob", 2, 8192, b"0123456789abcdef")
    expected = SHA512.credential("pw", b"0123456789abcdef", 8192)
    assert (rec.stored_key, rec.server_key) == (expected.stored_key, expected.server_key)
    salted = base64.b64encode(SHA256.salted_password("pw", b"s" * 16, 4096)).decode()
    s16 = base64.b64encode(b"s" * 16).decode()
    rec = parse_add_scram(f"SCRAM-SHA-256=[name=carol,salt={s16},saltedpassword={salted}]").message
    cred = SHA256.credential("pw", b"s" * 16, 4096)
    assert rec.stored_key == cred.stored_key
    # the stored credential verifies a real exchange
    server = ScramServer(SHA256, lambda u, m: cred if u == "carol" else None)
    client = ScramClient(SHA256, "carol", "pw")
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    for bad in ("SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=name=a,password=b", "SCRAM-SHA-256=[password=b]",
                "SCRAM-SHA-256=[name=a]", "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
                "SCRAM-SHA-256=[name=a,password=b,color=red]", "SCRAM-SHA-256=[name=a,saltedpassword=AAAA]",
                "SCRAM-SHA-256=[name=a,password=b,salt=***]", "nothing"):
        with pytest.raises(ScramArgumentError):
            parse_add_scram(bad)


def kraftwire(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=timeout)


def write_config(tmp_path, cport: int, sport: int) -> str:
    cfg = tmp_path / "server.properties"
    cfg.write_text("\n".join([
        "process.roles=controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{cport}",
        f"listeners=CONTROLLER://127.0.0.1:{cport},SASL_PLAINTEXT://127.0.0.1:{sport}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:alice;User:ANONYMOUS",
        f"log.dirs={tmp_path / 'data'}", "controller.quorum.election.timeout.ms=300", "",
    ]))
    return str(cfg)


def consume(port: int, mechanism: str, password: str, timeout_s: float = 15) -> tuple[int, list[KafkaError]]:
    errors: list[KafkaError] = []
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "scram-process-test",
                  "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism, "sasl.username": "alice",
                  "sasl.password": password, "error_cb": errors.append, "enable.auto.commit": False})
    got = 0
    try:
        c.assign([TopicPartition("__cluster_metadata", 0, 0)])
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and got < 3:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got += 1
            if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
                break
        return got, errors
    finally:
        c.close()


@pytest.mark.processes
def test_format_add_scram_then_a_server_process_authenticates(tmp_path):
    cport, sport = free_ports(2)
    cfg = write_config(tmp_path, cport, sport)
    out = kraftwire("storage", "format", "-c", cfg, "-t", random_uuid(),
                    "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
                    "-S", "SCRAM-SHA-512=[name=alice,iterations=8192,password=alice-secret]")
    assert out.returncode == 0, out.stderr
    records = [r.message for r in read_bootstrap(tmp_path / "data")]
    scram = [(r.name, r.mechanism, r.iterations) for r in records if type(r).__name__ == "UserScramCredentialRecord"]
    assert scram == [("alice", 1, 4096), ("alice", 2, 8192)]
    bad = kraftwire("storage", "format", "-c", cfg, "-t", random_uuid(), "--metadata-version", "10",
                    "--add-scram", "SCRAM-SHA-256=[name=a,password=b]")
    assert bad.returncode == 4 and "3.5-IV2" in bad.stderr   # ExitCode.STORAGE

    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - the child writes to it
    proc = subprocess.Popen([sys.executable, "-m", "kraftwire", "server", cfg], stdout=log, stderr=subprocess.STDOUT)
    try:
        got, errors = consume(sport, "SCRAM-SHA-512", "alice-secret")
        assert got == 3, (errors, (tmp_path / "server.log").read_text()[-3000:])
        got, errors = consume(sport, "SCRAM-SHA-256", "alice-secret")
        assert got == 3, errors
        got, errors = consume(sport, "SCRAM-SHA-256", "not-her-password", 10)
        assert got == 0
        assert any(e.code() == KafkaError._AUTHENTICATION and "invalid credentials" in e.str() for e in errors), errors
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    assert "SASL authentication from 127.0.0.1 on SASL_PLAINTEXT failed" in (tmp_path / "server.log").read_text()
