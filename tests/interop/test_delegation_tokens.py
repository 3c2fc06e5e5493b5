"""``kafka-delegation-tokens.sh --create/--describe/--renew/--expire`` over SASL/SCRAM (Kafka hands tokens out on
authenticated connections only) and a Kafka client logged in with the token, against a kraftwire broker on a kraftwire controller, a Kafka broker on a kraftwire
controller, and, as the baseline, a Kafka broker on a Kafka controller of the same release."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compat.interop import KAFKA_BROKER_FAST, KRAFTWIRE_FAST, Cluster
from compat.kafka import CONTROLLER_PORT, KafkaNode, KraftwireNode, loopback_hosts, start_all, wait_for
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]

SASL_PORT = 9094
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
TOKEN_PROPS = {"delegation.token.secret.key": "interop-token-key"}
KINDS = [("kraftwire", "kraftwire"), ("kraftwire", "kafka"), ("kafka", "kafka")]   # (controller, broker)


class TokenCluster(Cluster):
    """Controller 1 and broker 2 (each kraftwire or Kafka), the broker with a SASL_PLAINTEXT/SCRAM listener."""

    def __init__(self, dist, root: Path, controller: str, broker: str) -> None:
        super().__init__(dist, root)
        hosts = loopback_hosts(2, ports=(9092, CONTROLLER_PORT, SASL_PORT))
        quorum = [(1, hosts[0], CONTROLLER_PORT)]
        ctl_props = {**TOKEN_PROPS, **(KRAFTWIRE_FAST if controller == "kraftwire" else {})}
        make = KraftwireNode if controller == "kraftwire" else (lambda *a, **k: KafkaNode(dist, *a, **k))
        self.nodes[1] = make(self.root, 1, "controller", hosts[0], quorum, props=ctl_props)
        host = hosts[1]
        sasl = {"listeners": f"PLAINTEXT://{host}:9092,SASL_PLAINTEXT://{host}:{SASL_PORT}",
                "advertised.listeners": f"PLAINTEXT://{host}:9092,SASL_PLAINTEXT://{host}:{SASL_PORT}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS, **TOKEN_PROPS}
        if broker == "kraftwire":
            node = KraftwireNode(self.root, 2, "broker", host, quorum, props=sasl)
        else:
            node = KafkaNode(dist, self.root, 2, "broker", host, quorum,
                             props={**KAFKA_BROKER_FAST, "default.replication.factor": "1",
                                    "offsets.topic.replication.factor": "1", **sasl})
        self.nodes[2] = node
        self.sasl_bootstrap = f"{host}:{SASL_PORT}"

    def start(self) -> None:
        scram = [a for u, p in USERS.items() for a in ("--add-scram", f"SCRAM-SHA-256=[name={u},password={p}]")]
        level = self.upgrade_level   # SCRAM in the bootstrap needs 3.5-IV2, tokens 3.6-IV2
        self.nodes[1].format(self.cluster_id, release_version=level, extra=scram)
        self.nodes[2].format(self.cluster_id, release_version=level)
        start_all([self.nodes[1]], 90)
        self.wait_leader(60)
        start_all([self.nodes[2]], 120)

    def token_client(self, token_id: str, hmac: str) -> tuple[int, str]:
        """``kafka-topics.sh --list`` logged in with a delegation token (Kafka's ScramLoginModule tokenauth)."""
        cfg = self.root / "token.properties"
        cfg.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nrequest.timeout.ms=15000\n"
                       "default.api.timeout.ms=20000\n"
                       f'sasl.jaas.config={SCRAM_JAAS[:-1]} username="{token_id}" password="{hmac}" '
                       'tokenauth="true";\n')
        return self.dist.run("kafka-topics.sh", ["--bootstrap-server", self.sasl_bootstrap, "--command-config",
                                                 str(cfg), "--list"], timeout_s=90)

    def tool(self, user: str, *args: str) -> tuple[int, str]:
        cfg = self.root / f"{user}.properties"
        cfg.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                       f'sasl.jaas.config={SCRAM_JAAS[:-1]} username="{user}" password="{USERS[user]}";\n')
        return self.dist.run("kafka-delegation-tokens.sh", ["--bootstrap-server", self.sasl_bootstrap,
                                                            "--command-config", str(cfg), *args], timeout_s=120)


@pytest.fixture(scope="module", params=KINDS, ids=[f"{c}-controller-{b}-broker" for c, b in KINDS])
def cluster(request, kafka_dist, tmp_path_factory):
    controller, broker = request.param
    root = tmp_path_factory.mktemp(f"tokens-{controller}-{broker}-{kafka_dist.version}")
    c = TokenCluster(kafka_dist, root, controller, broker)
    with Fleet(root) as fleet:
        fleet.nodes = list(c.nodes.values())
        c.start()
        yield c


def test_delegation_token_tool(cluster) -> None:
    c = cluster
    rc, out = c.tool("alice", "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
    token = re.search(r"tokenId\s*:\s*(\S+)", out)
    assert rc == 0 and token is not None, out
    token_id = token.group(1)
    row = re.search(rf"^{re.escape(token_id)}\s+(\S+)\s+User:alice\s", out, re.M)
    assert row is not None, out
    hmac = row.group(1)

    # a broker answers Describe from its own metadata image: give it the moment it needs to replay the token
    def described(user: str, count: int, *owner: str) -> str | None:
        rc, out = c.tool(user, "--describe", *(a for o in owner for a in ("--owner-principal", o)))
        return out if rc == 0 and re.search(rf"Total number of tokens\s*:\s*{count}\b", out) else None
    out = wait_for(lambda: described("bob", 1, "User:alice"), 60, "bob (a renewer) sees alice's token")
    assert token_id in out, out
    # without --owner-principal the tool sends an empty owner list, for which Kafka lists nothing
    assert described("alice", 0) is not None
    # a client logs in with the token (SCRAM, tokenauth) and runs as alice; a wrong HMAC does not log in
    rc, out = c.token_client(token_id, hmac)
    assert rc == 0, out
    rc, out = c.token_client(token_id, "AAAA" + hmac[4:])
    assert rc != 0, out
    rc, out = c.tool("bob", "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    assert rc == 0 and "Completed renew operation" in out, out
    rc, out = c.tool("alice", "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
    assert rc == 0 and "Completed expire operation" in out, out
    wait_for(lambda: described("alice", 0, "User:alice"), 60, "the expired token gone")
