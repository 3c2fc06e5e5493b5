"""Client-side verbs (metadata-quorum, console-consumer, metadata-shell --bootstrap-controller, acls) take
``--command-config FILE`` with Kafka client properties and use it against secured listeners."""

from __future__ import annotations

import io

import anyio
import pytest

from kraftwire.cli.client_config import command_security
from kraftwire.cli.console_consumer import consume
from kraftwire.cli.live_metadata import fetch_live
from kraftwire.cli.main import main
from kraftwire.cli.metadata_quorum import describe
from kraftwire.net.client import RequestFailed
from kraftwire.security.authorizer import READ
from kraftwire.security.settings import SecurityConfigError

from .acl_helpers import grant
from .harness import USERS, secure_node

pytestmark = pytest.mark.anyio


def sasl_properties(path, certs, user: str = "admin", password: str | None = None,
                    mechanism: str = "SCRAM-SHA-512", protocol: str = "SASL_SSL") -> str:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    path.write_text("\n".join([
        f"security.protocol={protocol}", f"sasl.mechanism={mechanism}",
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required \\",
        f'    username="{user}" password="{USERS.get(user, "") if password is None else password}";',
        f"ssl.truststore.location={certs.ca}", "",
    ]))
    return str(path)


def mtls_properties(path, certs) -> str:
    path.write_text(f"security.protocol=SSL\nssl.keystore.type=PEM\nssl.keystore.location={certs.alice_keystore}\n"
                    f"ssl.truststore.type=PEM\nssl.truststore.location={certs.ca}\n")
    return str(path)


async def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = await anyio.to_thread.run_sync(lambda: main(list(argv)))
    out, err = capsys.readouterr()
    return code, out, err


async def test_metadata_quorum_over_sasl_ssl_and_mtls(certs, tmp_path, capsys):
    async with secure_node(certs) as sn:
        admin = sasl_properties(tmp_path / "admin.properties", certs)
        addr = f"127.0.0.1:{sn.port('SASL_SSL')}"
        code, out, err = await run_cli(capsys, "metadata-quorum", "--bootstrap-server", addr, "--command-config",
                                       admin, "describe", "--status")
        assert code == 0, err
        assert "LeaderId:               1" in out and "CurrentVoters:" in out
        code, out, err = await run_cli(capsys, "metadata-quorum", "--bootstrap-controller", addr,
                                       "--command-config", admin, "describe", "--replication", "--json")
        assert code == 0, err and '"Replication"' in out
        # the PLAIN mechanism from the same kind of file, on the SASL_PLAINTEXT listener
        plain = sasl_properties(tmp_path / "plain.properties", certs, mechanism="PLAIN", protocol="SASL_PLAINTEXT")
        result = await describe(f"127.0.0.1:{sn.port('SASL_PLAINTEXT')}", 10, command_security(plain))
        assert result["LeaderId"] == 1
        # mutual TLS: alice's certificate; DescribeQuorum needs DESCRIBE on the cluster, which alice lacks
        mtls = mtls_properties(tmp_path / "mtls.properties", certs)
        code, out, err = await run_cli(capsys, "metadata-quorum", "--bootstrap-server",
                                       f"127.0.0.1:{sn.port('MTLS')}", "--command-config", mtls, "describe",
                                       "--status")
        assert code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in err
        # without the file the secured listener cannot be used; a wrong password is reported
        code, _, err = await run_cli(capsys, "metadata-quorum", "--bootstrap-server", addr, "--timeout", "3",
                                     "describe", "--status")
        assert code == 1 and err.startswith("error:")
        wrong = sasl_properties(tmp_path / "wrong.properties", certs, password="nope")
        code, _, err = await run_cli(capsys, "metadata-quorum", "--bootstrap-server", addr, "--command-config",
                                     wrong, "describe", "--status")
        assert code == 1 and "SASL authentication" in err and "failed" in err


async def test_console_consumer_and_metadata_shell(certs, tmp_path, capsys):
    async with secure_node(certs) as sn:
        await grant(sn, "User:alice", READ)
        await grant(sn, "User:CN=alice,OU=ops,O=acme", READ)
        alice = sasl_properties(tmp_path / "alice.properties", certs, user="alice", mechanism="SCRAM-SHA-256")
        mtls = mtls_properties(tmp_path / "mtls.properties", certs)
        out = io.StringIO()
        printed = await consume(f"127.0.0.1:{sn.port('SASL_SSL')}", start="earliest", max_records=3,
                                idle_timeout=5, include_control=False, out=out, security=command_security(alice))
        assert printed == 3 and len(out.getvalue().splitlines()) == 3
        code, text, err = await run_cli(capsys, "console-consumer", "--bootstrap-server",
                                        f"127.0.0.1:{sn.port('SASL_SSL')}", "--command-config", alice,
                                        "--from-beginning", "--max-records", "2", "--timeout", "5")
        assert code == 0, err
        assert len(text.splitlines()) == 2 and '"type"' in text.splitlines()[0]
        # the MTLS listener maps alice's certificate to User:alice (it has READ too)
        src = await fetch_live(f"127.0.0.1:{sn.port('MTLS')}", 10, command_security(mtls))
        assert src.records and src.records[0][1].message.name == "metadata.version"
        code, text, err = await run_cli(capsys, "metadata-shell", "--bootstrap-controller",
                                        f"127.0.0.1:{sn.port('SASL_SSL')}", "--command-config", alice, "ls", "/")
        assert code == 0, err
        assert "scram" in text.split()
        # bob may not read the metadata topic
        bob = sasl_properties(tmp_path / "bob.properties", certs, user="bob")
        with pytest.raises(RequestFailed, match="TOPIC_AUTHORIZATION_FAILED"):
            await consume(f"127.0.0.1:{sn.port('SASL_SSL')}", start="earliest", max_records=1, idle_timeout=3,
                          include_control=False, out=io.StringIO(), security=command_security(bob))


async def test_acls_verb_uses_the_same_loader(certs, tmp_path, capsys):
    async with secure_node(certs) as sn:
        admin = sasl_properties(tmp_path / "admin.properties", certs)
        code, out, err = await run_cli(capsys, "acls", "--bootstrap-server", f"127.0.0.1:{sn.port('SASL_SSL')}",
                                       "--command-config", admin, "--add", "--allow-principal", "User:bob",
                                       "--operation", "Read", "--topic", "t1")
        assert code == 0, err and "User:bob" in out


def test_unusable_command_config_files(tmp_path, certs) -> None:
    assert command_security(None) is None
    with pytest.raises(SecurityConfigError, match="missing.properties"):
        command_security(str(tmp_path / "missing.properties"))
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    with pytest.raises(SecurityConfigError, match="bad.properties.*sasl.mechanism"):
        command_security(str(bad))
    assert main(["metadata-quorum", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(bad),
                 "describe", "--status"]) == 3   # ExitCode.CONFIG
    assert main(["console-consumer", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(bad)]) == 3
    assert main(["metadata-shell", "--bootstrap-controller", "127.0.0.1:1", "--command-config", str(bad),
                 "ls"]) == 3
    sec = command_security(sasl_properties(tmp_path / "ok.properties", certs))
    assert (sec.protocol, sec.mechanism, sec.username) == ("SASL_SSL", "SCRAM-SHA-512", "admin")
