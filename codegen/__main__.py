"""``python -m codegen [--check]``: (re)generate kraftwire/protocol/messages from schemas/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen.emit import generate
from codegen.index import generate_api_keys, generate_index
from codegen.schema import load_all, module_name

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
OUT = ROOT / "kraftwire" / "protocol" / "messages"


def render_all(schemas_dir: Path = SCHEMAS) -> dict[str, str]:
    """Every generated file's name and text, exactly as ``python -m codegen`` writes them."""
    schemas = load_all(schemas_dir)
    by_name = {s.name: s for s in schemas}
    files = {}
    for s in schemas:
        response = by_name[s.name[: -len("Request")] + "Response"] if s.kind == "request" else None
        files[f"{module_name(s.name)}.py"] = generate(s, response)
    files["__init__.py"] = generate_index(schemas)
    files["api_keys.py"] = generate_api_keys(schemas)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if generated files are stale")
    args = parser.parse_args(argv)
    files = render_all()
    stale = []
    for name, text in files.items():
        path = OUT / name
        if not path.exists() or path.read_text() != text:
            stale.append(name)
    extra = [p.name for p in OUT.glob("*.py") if p.name not in files]
    if args.check:
        for name in stale + extra:
            print(f"stale: {name}", file=sys.stderr)
        return 1 if stale or extra else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (OUT / name).write_text(files[name])
    for name in extra:
        (OUT / name).unlink()
    print(f"generated {len(files)} files ({len(stale)} changed, {len(extra)} removed) in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
