"""Real Kafka clients (kafka-python, confluent-kafka) authenticate to a kraftwire node over SASL_PLAINTEXT,
SASL_SSL, SSL and mutual TLS with certificates made in the test, and read ``__cluster_metadata`` only
when an ACL lets their principal READ it."""

from __future__ import annotations

import shutil
import time

import anyio
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import KafkaTimeoutError

from kraftwire.security.authorizer import GROUP, READ

from .acl_helpers import grant
from .harness import USERS, secure_node

pytestmark = pytest.mark.anyio
TOPIC = "__cluster_metadata"


def kp_consume(port: int, want: int, **security) -> list[int]:
    """Offsets kafka-python reads from the start of __cluster_metadata (raises if it cannot connect)."""
    security.setdefault("consumer_timeout_ms", 6000)
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", auto_offset_reset="earliest",
                             enable_auto_commit=False, request_timeout_ms=8000, **security)
    try:
        tp = KpTopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        for msg in consumer:
            got.append(msg.offset)
            if len(got) >= want:
                break
        return got
    finally:
        consumer.close()


FATAL = {KafkaError._AUTHENTICATION, KafkaError._TRANSPORT, KafkaError._SSL, KafkaError._ALL_BROKERS_DOWN,
         KafkaError.TOPIC_AUTHORIZATION_FAILED}


def ck_consume(port: int, want: int, timeout_s: float = 10.0, subscribe: bool = False,
               **conf) -> tuple[list[int], list[KafkaError]]:
    """Offsets confluent-kafka reads, and the errors librdkafka reported (error callback and fetch errors);
    it stops early at an authentication, TLS or authorization error."""
    errors: list[KafkaError] = []
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "security-test",
                         "enable.auto.commit": False, "error_cb": errors.append, "socket.timeout.ms": 5000,
                         "auto.offset.reset": "earliest", **conf})
    got: list[int] = []
    # assign() needs no group: a consumer without a group ACL still fetches, only subscribe() fails on it
    fatal = FATAL | {KafkaError.GROUP_AUTHORIZATION_FAILED} if subscribe else FATAL
    try:
        if subscribe:
            consumer.subscribe([TOPIC])
        else:
            consumer.assign([TopicPartition(TOPIC, 0, 0)])
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and len(got) < want and not any(e.code() in fatal for e in errors):
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                errors.append(msg.error())
                continue
            got.append(msg.offset())
        return got, errors
    finally:
        consumer.close()


def committed_count(sn) -> int:
    node = sn.node
    return sum(1 for b in node.log.read(0, 1 << 30) if not b.control for _ in b.records)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_kafka_python_sasl_plaintext(certs, mechanism, caplog):
    async with secure_node(certs) as sn:
        await grant(sn, "User:alice", READ)
        want = min(5, committed_count(sn))
        sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
                "sasl_plain_username": "alice"}
        got = await anyio.to_thread.run_sync(lambda: kp_consume(sn.port("SASL_PLAINTEXT"), want,
                                                                sasl_plain_password=USERS["alice"], **sasl))
        assert len(got) == want and got == sorted(got)
        caplog.clear()
        with pytest.raises(KafkaTimeoutError):  # kafka-python retries the login until its bootstrap timeout
            await anyio.to_thread.run_sync(lambda: kp_consume(sn.port("SASL_PLAINTEXT"), 1, bootstrap_timeout_ms=3000,
                                                              sasl_plain_password="wrong", **sasl))
        refused = [r.getMessage() for r in caplog.records if r.name.startswith("kafka.")
                   and "SaslAuthenticationFailedError" in r.getMessage()]
        assert refused, "kafka-python never saw SASL_AUTHENTICATION_FAILED (error 58)"
        assert all("[Error 58]" in m for m in refused)


async def test_kafka_python_without_acl_is_refused_until_granted(certs, caplog):
    async with secure_node(certs) as sn:
        sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": "bob", "sasl_plain_password": USERS["bob"]}
        caplog.clear()
        got = await anyio.to_thread.run_sync(lambda: kp_consume(sn.port("SASL_PLAINTEXT"), 1, consumer_timeout_ms=3000,
                                                                **sasl))
        assert got == []
        assert "__cluster_metadata is not authorized" in caplog.text   # kafka-python saw TOPIC_AUTHORIZATION_FAILED
        await grant(sn, "User:bob", READ)
        assert len(await anyio.to_thread.run_sync(lambda: kp_consume(sn.port("SASL_PLAINTEXT"), 2, **sasl))) == 2


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_confluent_sasl_ssl(certs, mechanism):
    async with secure_node(certs) as sn:
        await grant(sn, "User:alice", READ)
        want = min(5, committed_count(sn))
        conf = {"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism, "sasl.username": "alice",
                "ssl.ca.location": str(certs.ca)}
        port = sn.port("SASL_SSL")
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, want, **conf,
                                                                        **{"sasl.password": USERS["alice"]}))
        assert got == list(range(got[0], got[0] + want)) if got else False, errors
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, 1, 6, **conf,
                                                                        **{"sasl.password": "wrong"}))
        assert got == []
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert auth, errors
        assert any("Invalid username or password" in e.str() or "invalid credentials" in e.str() for e in auth)


async def test_confluent_authorization_errors_for_group_and_topic(certs):
    async with secure_node(certs) as sn:
        conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "bob",
                "sasl.password": USERS["bob"]}
        port = sn.port("SASL_PLAINTEXT")
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, 1, 5, subscribe=True, **conf))
        assert got == [] and any(e.code() == KafkaError.GROUP_AUTHORIZATION_FAILED for e in errors), errors
        await grant(sn, "User:bob", READ, GROUP, "security-test")
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, 1, 8, subscribe=True, **conf))
        assert got == [] and any(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors), errors
        await grant(sn, "User:bob", READ)
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, 2, 10, subscribe=True, **conf))
        assert len(got) == 2, errors


async def test_ssl_server_auth_anonymous_principal(certs):
    async with secure_node(certs) as sn:
        port = sn.port("SSL")
        conf = {"security_protocol": "SSL", "ssl_cafile": str(certs.ca)}
        # TLS without a client certificate: the principal is User:ANONYMOUS, which has no ACL yet
        assert await anyio.to_thread.run_sync(lambda: kp_consume(port, 1, consumer_timeout_ms=2000, **conf)) == []
        await grant(sn, "User:ANONYMOUS", READ)
        got = await anyio.to_thread.run_sync(lambda: kp_consume(port, 3, **conf))
        assert got == [got[0], got[0] + 1, got[0] + 2]
        # a client that does not trust the server's CA fails the handshake
        bad, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, 1, 5, **{
            "security.protocol": "SSL", "ssl.ca.location": str(certs.alice_cert)}))
        assert bad == [] and any(e.code() == KafkaError._SSL for e in errors), errors


async def test_mutual_tls_principal_from_certificate(certs):
    async with secure_node(certs) as sn:
        port = sn.port("MTLS")
        await grant(sn, "User:alice", READ)   # the MTLS listener maps CN=alice,... to alice
        conf = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca),
                "ssl.certificate.location": str(certs.alice_cert), "ssl.key.location": str(certs.alice_key)}
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(port, 3, **conf))
        assert len(got) == 3, errors
        # kafka-python with the same certificate
        kp = await anyio.to_thread.run_sync(lambda: kp_consume(port, 2, security_protocol="SSL",
                                                               ssl_cafile=str(certs.ca),
                                                               ssl_certfile=str(certs.alice_cert),
                                                               ssl_keyfile=str(certs.alice_key)))
        assert len(kp) == 2
        # no client certificate, or one from an untrusted CA: the handshake fails
        for extra in ({}, {"ssl.certificate.location": str(certs.rogue_cert),
                           "ssl.key.location": str(certs.rogue_key)}):
            got, errors = await anyio.to_thread.run_sync(lambda extra=extra: ck_consume(port, 1, 5, **{
                "security.protocol": "SSL", "ssl.ca.location": str(certs.ca), **extra}))
            assert got == [] and errors


async def test_kcat_scram_over_sasl_ssl(certs):
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (CI installs it)")
    async with secure_node(certs) as sn:
        await grant(sn, "User:alice", READ)
        base = ["kcat", "-b", f"127.0.0.1:{sn.port('SASL_SSL')}", "-X", "security.protocol=SASL_SSL",
                "-X", f"ssl.ca.location={certs.ca}", "-X", "sasl.username=alice"]
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"):
            auth = ["-X", f"sasl.mechanisms={mech}", "-X", f"sasl.password={USERS['alice']}"]
            out = await anyio.run_process([*base, *auth, "-C", "-t", TOPIC, "-o", "beginning", "-c", "3", "-e",
                                           "-f", "%o\\n"], check=False)
            assert out.returncode == 0, out.stderr.decode()
            assert len(out.stdout.split()) == 3
        bad = await anyio.run_process([*base, "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.password=nope",
                                       "-m", "3", "-L"], check=False)
        assert bad.returncode != 0 and b"invalid credentials" in bad.stderr
