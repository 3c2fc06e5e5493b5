"""java.util.Properties.load semantics of server.properties (checked against the JDK when present)."""

from __future__ import annotations

import pytest

from kraftwire.config import ConfigError, load_config, parse_properties

CASES = [
    ("a=1\nb = 2\nc:3\nd : 4\n", {"a": "1", "b": "2", "c": "3", "d": "4"}),
    ("key value\nkey2\tvalue two\n", {"key": "value", "key2": "value two"}),
    ("k = v = w\n", {"k": "v = w"}),
    ("  # comment\n! also\n\n   \nx=1\n", {"x": "1"}),
    ("list=a,\\\n     b,\\\n     c\n", {"list": "a,b,c"}),
    ("path=C:\\\\dir\\\\x\n", {"path": "C:\\dir\\x"}),
    ("odd=ends\\\\\nnext=1\n", {"odd": "ends\\", "next": "1"}),
    ("sp\\ ace=1\neq\\=key=2\ncol\\:key:3\n", {"sp ace": "1", "eq=key": "2", "col:key": "3"}),
    ("tab=a\\tb\nuni=\\u00e9t\\u00E9\nplain=\\q\n", {"tab": "a\tb", "uni": "été", "plain": "q"}),
    ("emptykey\nemptyval=\n", {"emptykey": "", "emptyval": ""}),
    ("dup=1\ndup=2\n", {"dup": "2"}),
    ("cr=1\r\ncrlf=2\rlast=3", {"cr": "1", "crlf": "2", "last": "3"}),
    ("a=1\\\n# not a comment\n", {"a": "1# not a comment"}),
    ("a=1\\\n\nb=2\n", {"a": "1", "b": "2"}),
    ("trail=  v  \n", {"trail": "v  "}),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_java_properties_forms(text, expected) -> None:
    assert parse_properties(text) == expected


def test_malformed_unicode_escape_names_it() -> None:
    with pytest.raises(ConfigError, match="uxxxx"):
        parse_properties("k=\\u12x4\n")


def test_server_properties_in_every_form(tmp_path) -> None:
    cfg = tmp_path / "server.properties"
    cfg.write_text("process.roles controller\nnode.id: 1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                   "listeners = CONTROLLER://127.0.0.1:9093  \nlog.dirs=/tmp/a,\\\n  /tmp/b\nmystery.key=1\n")
    c = load_config(cfg)
    assert c.node_id == 1 and c.roles == ["controller"] and c.listeners[0].port == 9093
    assert [str(d) for d in c.log_dirs] == ["/tmp/a", "/tmp/b"]
    assert c.unknown == ["mystery.key"]


def _esc(s: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) > 0x7E or c in "\\\t" else c for c in s)


@pytest.mark.java
def test_same_as_the_jdk(tmp_path) -> None:
    """Every case above loads to the same map in java.util.Properties."""
    import subprocess
    from pathlib import Path

    from .tools import require_tool

    java = require_tool("java", "compares with java.util.Properties")
    files = []
    for i, (text, _) in enumerate(CASES):
        f = tmp_path / f"case{i}.properties"
        f.write_bytes(text.encode())
        files.append(str(f))
    src = Path(__file__).with_name("PrintProps.java")
    out = subprocess.run([java, str(src), *files], capture_output=True, text=True, timeout=120, check=True).stdout
    blocks = out.split("== ")[1:]
    assert len(blocks) == len(CASES)
    for block, (text, _) in zip(blocks, CASES, strict=True):
        lines = block.splitlines()[1:]
        ours = [f"{_esc(k)}\t{_esc(v)}" for k, v in sorted(parse_properties(text).items())]
        assert lines == ours, text
