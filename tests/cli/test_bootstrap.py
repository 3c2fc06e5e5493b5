"""Bootstrap lists for verbs that hand one address on (analytics' Spark source)."""

from __future__ import annotations

import socket

from kraftwire.cli.analytics import _first_reachable


def test_analytics_bootstrap_list_picks_the_first_node_that_answers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert _first_reachable(f"127.0.0.1:1, 127.0.0.1:{port}") == f"127.0.0.1:{port}"
    assert _first_reachable("127.0.0.1:1,127.0.0.1:2") == "127.0.0.1:1"   # none: the first, to be reported
