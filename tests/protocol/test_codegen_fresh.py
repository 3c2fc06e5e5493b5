"""The committed codecs in kraftwire/protocol/messages are exactly what the generator writes now."""

from __future__ import annotations

import ast
from pathlib import Path

import codegen.__main__ as cg
from codegen.emit import HEADER

MESSAGES = Path(cg.OUT)


def test_regeneration_into_a_tmp_dir_equals_the_committed_package(tmp_path: Path) -> None:
    files = cg.render_all()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    fresh = {p.name: p.read_text() for p in tmp_path.glob("*.py")}
    committed = {p.name: p.read_text() for p in MESSAGES.glob("*.py")}
    assert sorted(fresh) == sorted(committed), "generated file set differs: run `python -m codegen`"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale generated files (run `python -m codegen`): {stale}"


def test_check_mode_reports_clean() -> None:
    assert cg.main(["--check"]) == 0


def test_every_generated_file_says_so_and_parses() -> None:
    prefix = HEADER.split("{source}")[0]
    for path in MESSAGES.glob("*.py"):
        text = path.read_text()
        assert text.startswith(prefix), path.name
        doc = ast.get_docstring(ast.parse(text))
        assert doc and ".." not in doc.replace("...", ""), (path.name, doc)
