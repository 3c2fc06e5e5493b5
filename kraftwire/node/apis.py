"""A plane's shell handlers: the APIs whose handlers are still async shell code, run when the node core's door
relays a request to the shell (``core/api_door.py`` ``RelayKind.HANDLER``). ApiVersions, refusals,
authorization and the APIs the door answers itself never reach it; the table is ``kraftwire.core.api_registry``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kraftwire.protocol.requests import RefusedRequest, Reply

Handler = Callable[[Any, Any], Awaitable[Reply | None]]   # (Request, RequestContext) -> Reply


class Dispatcher:
    """A plane's API key → shell handler table. Every API the plane advertises (``table``) has a handler
    here or is answered by the door (``check``), so what a node says it serves and what it handles cannot
    drift apart."""

    def __init__(self, table: dict[int, tuple[int, int]], where: str) -> None:
        self.table = table
        self.where = where
        self.handlers: dict[int, Handler] = {}

    def on(self, keys: int | Iterable[int], handler: Handler) -> None:
        for key in [keys] if isinstance(keys, int) else keys:
            if key in self.handlers:
                raise ValueError(f"API {key} has two handlers")
            self.handlers[key] = handler

    def check(self, answered_elsewhere: Iterable[int] = ()) -> None:
        """Raise if an advertised API (other than ``answered_elsewhere``) has no handler."""
        missing = sorted(set(self.table) - set(self.handlers) - set(answered_elsewhere))
        if missing:
            raise ValueError(f"advertised APIs without a handler {self.where}: {missing}")

    async def dispatch(self, request: Any, ctx: Any) -> Reply | None:
        handler = self.handlers.get(request.api_key)
        if handler is None:
            raise RefusedRequest(f"API {request.api_key} has no handler {self.where}")
        return await handler(request, ctx)
