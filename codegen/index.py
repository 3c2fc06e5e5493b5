"""The generated package index: lookups by API key, record type id and name."""

from __future__ import annotations

from codegen.emit import HEADER
from codegen.schema import Schema, module_name


def generate_index(schemas: list[Schema]) -> str:
    requests: dict[int, str] = {}
    responses: dict[int, str] = {}
    records: dict[int, str] = {}
    names: dict[str, str] = {}
    for s in schemas:
        mod = module_name(s.name)
        names[s.name] = mod
        if s.kind == "request":
            requests[s.api_key] = s.name
        elif s.kind == "response":
            responses[s.api_key] = s.name
        elif s.kind == "metadata":
            records[s.api_key] = s.name

    def fmt(d: dict) -> str:
        return "{\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(d.items())) + "}"

    return "\n".join([
        HEADER.format(source="schemas/"),
        '"""Generated message codecs. Look classes up by name, API key or metadata record type."""',
        "",
        "from __future__ import annotations",
        "",
        "import importlib",
        "from typing import Any",
        "",
        f"MODULES: dict[str, str] = {fmt(names)}",
        "",
        "# API key -> request / response message name",
        f"REQUESTS: dict[int, str] = {fmt(requests)}",
        f"RESPONSES: dict[int, str] = {fmt(responses)}",
        "",
        "# metadata record type id -> record name (the record's apiKey in its schema)",
        f"METADATA_RECORDS: dict[int, str] = {fmt(records)}",
        "",
        "",
        "def message_class(name: str) -> Any:",
        '    """The generated class for a schema name such as ``"FetchRequest"``."""',
        "    module = importlib.import_module(f'{__name__}.{MODULES[name]}')",
        "    return getattr(module, name)",
        "",
    ])
