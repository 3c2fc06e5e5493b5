"""The roles' typed context (node/role_host.py ``RoleHost``): everything it names exists on a built server,
and the roles' modules name the server only through it (no ``server: Any``, no private task groups)."""

from __future__ import annotations

import inspect
from pathlib import Path

from kraftwire.node.role_host import RoleHost
from kraftwire.node.server import Server
from kraftwire.raft import MemoryLog, MemoryStateStore
from tests.broker.harness import CLUSTER_ID, controller_config
from tests.ports import free_ports

NODE = Path(__file__).resolve().parents[2] / "kraftwire" / "node"


def test_a_server_has_everything_the_roles_context_names() -> None:
    ports = free_ports(1)
    server = Server(controller_config(1, ports), log=MemoryLog(), store=MemoryStateStore(), cluster_id=CLUSTER_ID)
    members = set(RoleHost.__annotations__) | {n for n, v in vars(RoleHost).items()
                                                 if inspect.isfunction(v) and not n.startswith("_")}
    missing = sorted(n for n in members if not hasattr(server, n))
    assert missing == [] and {"cfg", "peers", "driver", "stop"} <= members


def test_the_roles_name_the_server_only_through_their_context() -> None:
    for name in ("voter.py", "broker_role.py", "voter_changes.py"):
        text = (NODE / name).read_text()
        assert "server: RoleHost" in text and "server: Any" not in text, name
    for path in NODE.glob("*.py"):
        assert "._tg" not in path.read_text().replace("self._tg", ""), f"{path.name} reaches into a private task group"
