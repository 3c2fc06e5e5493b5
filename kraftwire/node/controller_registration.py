"""A controller's registration of its own listeners (KIP-919 ControllerRegistration).

``controller.quorum.voters`` only tells nodes where the other voters' *controller* listeners are.
So that every voter can direct a client to the other voters on the listener the client came in on
(a SASL_SSL client must not be sent to a PLAINTEXT controller port), each voter with listeners of
its own besides the controller listener sends a ControllerRegistrationRequest to the active
controller; the resulting RegisterControllerRecord puts its advertised listeners in every image.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from kraftwire.metadata.features import MV_CONTROLLER_REGISTRATION, SUPPORTED_FEATURES
from kraftwire.metadata.image import Endpoint, MetadataImage
from kraftwire.protocol.messages.controller_registration_request import (
    ControllerRegistrationRequest,
    Feature,
    Listener,
)

log = logging.getLogger(__name__)
PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

Send = Callable[[ControllerRegistrationRequest], Awaitable[Any]]


class ControllerRegistrar:
    """Keeps this voter's RegisterControllerRecord in the image matching its advertised listeners."""

    def __init__(self, node_id: int, listeners: list[tuple[str, str, int, str]],
                 image: Callable[[], MetadataImage], send: Send, *, retry_s: float = 0.5) -> None:
        self.node_id = node_id
        self.endpoints = tuple(Endpoint(n, h, p, PROTOCOL_IDS.get(proto, 0)) for n, h, p, proto in listeners)
        self.image = image
        self.send = send
        self.retry_s = retry_s
        self.incarnation_id = uuid.uuid4()
        self.registered = anyio.Event()

    def current(self) -> bool:
        """Whether the image already holds our listeners (from this or an earlier incarnation)."""
        reg = self.image().controllers.get(self.node_id)
        return reg is not None and set(reg.listeners) == set(self.endpoints)

    def request(self) -> ControllerRegistrationRequest:
        return ControllerRegistrationRequest(
            controller_id=self.node_id, incarnation_id=self.incarnation_id, zk_migration_ready=False,
            listeners=[Listener(e.name, e.host, e.port, e.security_protocol) for e in self.endpoints],
            features=[Feature(name, lo, hi) for name, (lo, hi) in sorted(SUPPORTED_FEATURES.items())])

    async def run(self) -> None:
        """Register once the metadata.version allows it; retry until the record is in the image."""
        while True:
            image = self.image()
            if self.current():
                self.registered.set()
                await anyio.sleep(self.retry_s * 4)     # cheap check: a re-formatted peer could drop us
                continue
            if image.metadata_version >= MV_CONTROLLER_REGISTRATION:
                resp = await self.send(self.request())
                code = getattr(resp, "error_code", None)
                if code:
                    log.debug("controller registration of node %d refused: error %d %s", self.node_id, code,
                              getattr(resp, "error_message", "") or "")
                elif code == 0:
                    log.info("controller %d registered listeners %s", self.node_id,
                             ", ".join(f"{e.name}://{e.host}:{e.port}" for e in self.endpoints))
                    # Accepted: the record reaches our own image once our next Fetch learns the commit.
                    # Wait for that (as Kafka's registration manager does) instead of registering twice.
                    await self._await_current(self.retry_s * 20)
                    continue
            await anyio.sleep(self.retry_s)

    async def _await_current(self, timeout_s: float) -> None:
        with anyio.move_on_after(timeout_s):
            while not self.current():
                await anyio.sleep(self.retry_s / 10)
