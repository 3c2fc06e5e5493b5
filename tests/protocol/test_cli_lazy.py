"""The ``kraftwire`` command imports only the verb it runs; --help/--version import none."""

from __future__ import annotations

import json
import subprocess
import sys

from kraftwire.cli.main import VERBS, build_parser


def _subparser_help(parser) -> dict[str, str]:
    sub = next(a for a in parser._actions if a.dest == "verb")
    return {a.dest: a.help for a in sub._choices_actions}


def test_listed_help_equals_what_each_verb_registers():
    registered = _subparser_help(build_parser())  # argv None: every verb module registers itself
    assert registered == {verb: help_text for verb, (_, help_text) in VERBS.items()}


def _modules_after(argv: list[str]) -> list[str]:
    code = ("import json, sys\nfrom kraftwire.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('kraftwire'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_and_version_import_no_verb_and_no_codec():
    for argv in (["--help"], ["--version"]):
        mods = _modules_after(argv)
        assert set(mods) <= {"kraftwire", "kraftwire.cli", "kraftwire.cli.main"}, (argv, mods)


def test_a_verb_imports_its_own_module_only():
    mods = _modules_after(["storage", "--help"])
    assert "kraftwire.cli.storage" in mods
    others = {f"kraftwire.cli.{m}" for m, _ in VERBS.values()} - {"kraftwire.cli.storage"}
    assert not others & set(mods)
