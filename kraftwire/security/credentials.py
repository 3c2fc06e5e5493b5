"""``--add-scram`` arguments (as ``kafka-storage.sh format`` takes them) → ``UserScramCredentialRecord``.

Format: ``MECHANISM=[name=alice,password=alice-secret]``, optionally with ``iterations=8192`` and
``salt=<base64>``, or ``saltedpassword=<base64>`` together with ``salt`` instead of ``password``.
Values may be double-quoted. The salt is random unless given; iterations default to 4096.
"""

from __future__ import annotations

import base64
import binascii

from kraftwire.metadata.features import wrap
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.protocol.metadata import MetadataRecord
from kraftwire.security.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS

SCRAM_MIN_METADATA_VERSION = 11     # 3.5-IV2: the first level with SCRAM records


class ScramArgumentError(ValueError):
    """An ``--add-scram`` argument that cannot be used; the message says why."""


def _b64(what: str, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ScramArgumentError(f"failed to decode the given {what}: {text!r}") from None


def _components(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ScramArgumentError(f"no equals sign in SCRAM component {part!r}")
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        out[key.strip()] = value
    return out


def parse_add_scram(argument: str) -> MetadataRecord:
    """One ``--add-scram`` argument as a metadata record; raises ScramArgumentError."""
    text = argument.strip()
    mech_name, sep, config = text.partition("=")
    if not sep:
        raise ScramArgumentError(f"failed to find an equals sign in SCRAM argument {text!r}")
    mech = MECHANISMS.get(mech_name.strip().upper())
    if mech is None:
        raise ScramArgumentError(f"the add-scram mechanism {mech_name} is not supported "
                                 f"(use {' or '.join(MECHANISMS)})")
    if not (config.startswith("[") and config.endswith("]")):
        raise ScramArgumentError("expected the SCRAM configuration in [brackets], e.g. "
                                 "SCRAM-SHA-256=[name=alice,password=alice-secret]")
    parts = _components(config[1:-1])
    name = parts.pop("name", None)
    if not name:
        raise ScramArgumentError("you must supply 'name' to add-scram")
    salt = _b64("salt", parts.pop("salt")) if "salt" in parts else None
    try:
        iterations = int(parts.pop("iterations", str(MIN_ITERATIONS)))
    except ValueError:
        raise ScramArgumentError("failed to parse the iterations count") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramArgumentError(f"the 'iterations' value must be within {MIN_ITERATIONS}..{MAX_ITERATIONS} "
                                 f"for {mech.name}")
    password = parts.pop("password", None)
    salted_text = parts.pop("saltedpassword", None)
    if parts:
        raise ScramArgumentError(f"unknown SCRAM configurations: {', '.join(sorted(parts))}")
    if password is not None:
        cred = mech.credential(password, salt, iterations)
    elif salted_text is not None:
        if salt is None:
            raise ScramArgumentError("you must supply 'salt' with 'saltedpassword' to add-scram")
        cred = mech.credential_from_salted(_b64("saltedpassword", salted_text), salt, iterations)
    else:
        raise ScramArgumentError("you must supply one of 'password' or 'saltedpassword' to add-scram")
    return wrap(UserScramCredentialRecord(name=name, mechanism=mech.type_id, salt=cred.salt,
                                          stored_key=cred.stored_key, server_key=cred.server_key,
                                          iterations=cred.iterations))
