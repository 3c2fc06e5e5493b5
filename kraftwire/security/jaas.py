"""The ``sasl.jaas.config`` value: ``<LoginModule> <flag> key="value" ...;``.

kraftwire reads the options Kafka's own modules use: ``username``/``password`` (what this node
sends when it connects to another node) and ``user_<name>="<password>"`` (PLAIN users a listener
accepts). The login module class names only what the entry is for; it loads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasError(ValueError):
    """A ``sasl.jaas.config`` value that does not parse."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def username(self) -> str | None:
        return self.options.get("username")

    @property
    def password(self) -> str | None:
        return self.options.get("password")

    def plain_users(self) -> dict[str, str]:
        """``user_alice="secret"`` options as {"alice": "secret"}."""
        return {k[5:]: v for k, v in self.options.items() if k.startswith("user_") and len(k) > 5}


def _tokens(text: str) -> list[tuple[str, str]]:
    """("word"|"str"|"=" |";", value) tokens; strings take double or single quotes and ``\\`` escapes."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "=;":
            out.append((ch, ch))
            i += 1
        elif ch in "\"'":
            buf = []
            i += 1
            while i < len(text) and text[i] != ch:
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                buf.append(text[i])
                i += 1
            if i >= len(text):
                raise JaasError("unterminated quoted value in sasl.jaas.config")
            out.append(("str", "".join(buf)))
            i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "=;\"'":
                j += 1
            out.append(("word", text[i:j]))
            i = j
    return out


def parse_jaas(text: str) -> JaasEntry:
    """The single login module entry of a ``sasl.jaas.config`` value (Kafka allows exactly one)."""
    toks = _tokens(text)
    if len(toks) < 3 or toks[0][0] != "word" or toks[1][0] != "word":
        raise JaasError("sasl.jaas.config must look like '<LoginModule> required key=\"value\" ...;'")
    module, flag = toks[0][1], toks[1][1].lower()
    if flag not in FLAGS:
        raise JaasError(f"sasl.jaas.config: invalid control flag {toks[1][1]!r}")
    options: dict[str, str] = {}
    i = 2
    while i < len(toks) and toks[i][0] != ";":
        if i + 2 >= len(toks) or toks[i][0] != "word" or toks[i + 1][0] != "=" or toks[i + 2][0] not in ("word", "str"):
            raise JaasError(f"sasl.jaas.config: expected key=value near {toks[i][1]!r}")
        options[toks[i][1]] = toks[i + 2][1]
        i += 3
    if i >= len(toks):
        raise JaasError("sasl.jaas.config must end with ';'")
    if i != len(toks) - 1:
        raise JaasError("sasl.jaas.config must hold exactly one login module")
    return JaasEntry(module, flag, options)
