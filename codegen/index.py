"""The generated package index: lookups by API key, record type id and name."""

from __future__ import annotations

from codegen.emit import HEADER
from codegen.schema import Schema, module_name, snake


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


def generate_api_keys(schemas: list[Schema]) -> str:
    """``ApiKey``: every request schema's apiKey by name (``FetchRequest`` → ``ApiKey.FETCH``), and the
    listeners (``controller``, ``broker``, ``zkBroker``) each schema says the API is served on."""
    requests = sorted((s for s in schemas if s.kind == "request"), key=lambda s: s.api_key)
    members = "".join(f"    {snake(s.name[: -len('Request')]).rstrip('_').upper()} = {s.api_key}\n" for s in requests)
    listeners = "".join(f"    ApiKey.{snake(s.name[: -len('Request')]).rstrip('_').upper()}: "
                        f"frozenset({sorted(s.listeners)!r}),\n" for s in requests)
    return "\n".join([
        HEADER.format(source="schemas/ (apiKey and name of each request)"),
        '"""The Kafka API keys kraftwire has layouts for, named as Kafka names them, and where each is served."""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum",
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """A request header\'s API key (an ``int``: compares and hashes as the bare number)."""',
        "",
        members,
        "",
        "# API key -> the schema's ``listeners``: which kinds of listener Kafka serves the API on",
        "LISTENERS: dict[ApiKey, frozenset[str]] = {",
        listeners + "}",
        "",
    ])
