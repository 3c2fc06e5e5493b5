"""`kraftwire acls` adds, lists and removes ACLs over an authenticated connection (like kafka-acls.sh)."""

from __future__ import annotations

import pytest

from kraftwire.cli.acls import _security, execute
from kraftwire.cli.main import build_parser, main
from kraftwire.net.client import RequestFailed
from kraftwire.security.authorizer import ALLOW, DENY, DESCRIBE, LITERAL, PREFIXED, READ, TOPIC, WRITE

from .harness import USERS, secure_node

pytestmark = pytest.mark.anyio


def write_admin_properties(path, certs) -> str:
    path.write_text("\n".join([
        "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-256",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{USERS["admin"]}";',
        f"ssl.truststore.location={certs.ca}", "",
    ]))
    return str(path)


async def test_add_list_remove(certs, tmp_path):
    async with secure_node(certs) as sn:
        props = write_admin_properties(tmp_path / "admin.properties", certs)
        base = ["acls", "--bootstrap-server", f"127.0.0.1:{sn.port('SASL_SSL')}", "--command-config", props]

        async def cli(*argv: str) -> list[str]:
            args = build_parser().parse_args([*base, *argv])
            return await execute(args, _security(args))

        out = await cli("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
                        "--topic", "__cluster_metadata")
        assert len(out) == 2 and "User:alice" in out[0]
        await cli("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "Write",
                  "--topic", "app-", "--resource-pattern-type", "prefixed")
        await cli("--add", "--consumer", "--allow-principal", "User:carol", "--topic", "orders", "--group", "g1")
        acls = set(sn.node.voter.controller.controller.committed_image.acls.values())
        got = {(a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation, a.permission_type)
               for a in acls}
        assert got == {
            (TOPIC, "__cluster_metadata", LITERAL, "User:alice", "*", READ, ALLOW),
            (TOPIC, "__cluster_metadata", LITERAL, "User:alice", "*", DESCRIBE, ALLOW),
            (TOPIC, "app-", PREFIXED, "User:bob", "10.0.0.9", WRITE, DENY),
            (TOPIC, "orders", LITERAL, "User:carol", "*", READ, ALLOW),
            (TOPIC, "orders", LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
            (3, "g1", LITERAL, "User:carol", "*", READ, ALLOW),
        }
        listing = await cli("--list", "--topic", "__cluster_metadata")
        assert listing[0].startswith("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, "
                                     "name=__cluster_metadata, patternType=LITERAL)`")
        assert sum("principal=User:alice" in line for line in listing) == 2
        everything = await cli("--list")
        assert sum(line.startswith("Current ACLs") for line in everything) == 4
        by_principal = await cli("--list", "--principal", "User:carol")
        assert sum("User:carol" in line for line in by_principal) == 3
        removed = await cli("--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic",
                            "__cluster_metadata")
        assert len(removed) == 1 and "operation=READ" in removed[0]
        assert len(sn.node.voter.controller.controller.committed_image.acls) == 5

        # alice may not manage ACLs
        alice = tmp_path / "alice.properties"
        alice.write_text((tmp_path / "admin.properties").read_text().replace(
            'username="admin"', 'username="alice"').replace(USERS["admin"], USERS["alice"]))
        args = build_parser().parse_args(["acls", "--bootstrap-server", f"127.0.0.1:{sn.port('SASL_SSL')}",
                                          "--command-config", str(alice), "--list"])
        with pytest.raises(RequestFailed, match="CLUSTER_AUTHORIZATION_FAILED"):
            await execute(args, _security(args))


def test_usage_errors(capsys):
    assert main(["acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--topic", "t"]) == 2
    assert "allow-principal" in capsys.readouterr().err
    assert main(["acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--allow-principal", "alice",
                 "--topic", "t"]) == 2
    assert main(["acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--allow-principal", "User:a",
                 "--operation", "Fly", "--topic", "t"]) == 2
    assert main(["acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--allow-principal", "User:a"]) == 2
