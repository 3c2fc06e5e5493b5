"""Kafka principals (``Type:Name``), ``super.users``, and TLS principals from certificate subjects.

A TLS client's principal is ``User:`` plus its certificate subject in RFC 2253 form (what Java's
``X500Principal.getName()`` prints, e.g. ``CN=alice,OU=ops,O=acme``), optionally rewritten by
``ssl.principal.mapping.rules`` (``RULE:pattern/replacement/[LU]`` entries and ``DEFAULT``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"
WILDCARD_PRINCIPAL = "User:*"

# Python's ssl attribute names -> RFC 2253 / RFC 4514 keywords Java prints.
_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID",
}


class PrincipalError(ValueError):
    """Text that is not a ``Type:Name`` principal, or a certificate no mapping rule accepts."""


def parse_principal(text: str) -> tuple[str, str]:
    """``"User:alice"`` → ("User", "alice"); the name may contain colons."""
    kind, sep, name = text.strip().partition(":")
    if not sep or not kind:
        raise PrincipalError(f"could not parse principal {text!r} (expected Type:Name)")
    return kind, name


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by semicolons, e.g. ``User:admin;User:CN=ctl,O=acme``."""
    out = set()
    for item in text.split(";"):
        item = item.strip()
        if item:
            kind, name = parse_principal(item)
            out.add(f"{kind}:{name}")
    return frozenset(out)


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def subject_dn(subject: Iterable[Iterable[tuple[str, str]]]) -> str:
    """RFC 2253 text of a subject from ``SSLSocket.getpeercert()`` (most specific RDN first)."""
    rdns = ["+".join(f"{_KEYWORDS.get(k, k)}={_escape(v)}" for k, v in rdn) for rdn in subject]
    return ",".join(reversed(rdns))


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None    # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        out = m.expand(self.replacement)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


def _java_replacement(text: str) -> str:
    """Java's ``$1`` group references → Python's ``\\g<1>``; backslashes kept literal."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", text.replace("\\", "\\\\"))


def _until_slash(text: str, i: int) -> tuple[str, int]:
    out = []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == "/":
            out.append("/")
            i += 2
            continue
        if ch == "/":
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise PrincipalError(f"unterminated RULE in ssl.principal.mapping.rules: {text!r}")


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule that matches the whole DN decides the name."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules: list[_Rule] = []
        i, text = 0, rules.strip()
        while i < len(text):
            if text[i] in ", \t\n":
                i += 1
            elif text.startswith("DEFAULT", i):
                self.rules.append(_Rule(None))
                i += len("DEFAULT")
            elif text.startswith("RULE:", i):
                pattern, i = _until_slash(text, i + len("RULE:"))
                replacement, i = _until_slash(text, i)
                case = ""
                if i < len(text) and text[i] in "LU":
                    case, i = text[i], i + 1
                try:
                    compiled = re.compile(pattern)
                except re.error as e:
                    raise PrincipalError(f"invalid pattern {pattern!r} in ssl.principal.mapping.rules: {e}") from None
                self.rules.append(_Rule(compiled, _java_replacement(replacement), case))
            else:
                raise PrincipalError(f"invalid ssl.principal.mapping.rules at {text[i:]!r}")
        if not self.rules:
            self.rules.append(_Rule(None))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise PrincipalError(f"no ssl.principal.mapping.rules entry applies to {dn!r}")

    def principal(self, dn: str) -> str:
        return f"User:{self.name(dn)}"
