"""Delegation tokens as SCRAM credentials (KIP-48): a token's password is its HMAC, HMAC-SHA512 of the token id
under ``delegation.token.secret.key``, in base64; a client logs in with SCRAM, user name = token id, and the
``tokenauth=true`` extension. ``TokenCredentials`` answers the SCRAM server's look-up from the metadata image."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Callable

from kraftwire.metadata.image import MetadataImage, ScramCredential
from kraftwire.security.scram import ScramMechanism


def token_hmac(secret: str, token_id: str) -> bytes:
    """The token's HMAC (its password): HMAC-SHA512 of the id under the secret key, both UTF-8."""
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


class TokenCredentials:
    """token id, mechanism -> (SCRAM credential of the token's password, owner) for live tokens of the image."""

    def __init__(self, image: Callable[[], MetadataImage], secret: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.image = image
        self.secret = secret
        self.clock = clock

    def __call__(self, token_id: str, mechanism: ScramMechanism) -> tuple[ScramCredential, str] | None:
        token = self.image().delegation_tokens.get(token_id)
        now = int(self.clock() * 1000)
        if token is None or token.expiration_timestamp < now or token.max_timestamp < now:
            return None
        password = base64.b64encode(token_hmac(self.secret, token_id)).decode()
        return mechanism.credential(password), token.owner
