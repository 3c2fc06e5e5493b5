"""A plane's dispatcher: the registry's ApiVersions table and refusals in front of the handlers the roles register
(the table itself, and every served, forwarded or refused API, is ``kraftwire.core.api_registry``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kraftwire.core.api_registry import Features, answer_api_versions, with_features
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.requests import RefusedRequest, Reply

Handler = Callable[[Any, Any], Awaitable[Reply | None]]   # (Request, RequestContext) -> Reply
FastHandler = Callable[[Any, Any], Reply | Awaitable[Reply]]   # see ``Dispatcher.on_fast``


class Dispatcher:
    """A node's one API key → handler table. ApiVersions is answered from ``table`` (the versions the
    node advertises), an API or version outside it is refused, and every advertised API must have a
    handler (``check``), so what a node says it serves and what it handles cannot drift apart."""

    def __init__(self, table: dict[int, tuple[int, int]], where: str,
                 features: Callable[[], Features] | None = None) -> None:
        self.table = table
        self.where = where
        self.features = features   # what ApiVersions v3+ reports: see ``with_features``
        self.handlers: dict[int, Handler] = {}
        self.fast: dict[int, FastHandler] = {}   # see ``fast_handler``

    def on(self, keys: int | Iterable[int], handler: Handler) -> None:
        for key in [keys] if isinstance(keys, int) else keys:
            if key in self.handlers:
                raise ValueError(f"API {key} has two handlers")
            self.handlers[key] = handler

    def on_fast(self, key: int, handler: FastHandler) -> None:
        """A synchronous form of ``key``'s handler for the listener's fast path: it returns the Reply when the
        answer is ready at once, else an awaitable of it; it must answer exactly as the async handler does."""
        if key not in self.handlers:
            raise ValueError(f"API {key} has no handler to speed up")
        self.fast[key] = handler

    def fast_handler(self, key: int, version: int) -> FastHandler | None:
        """The fast form of ``key``'s handler when the request would reach it (an advertised API and
        version, not ApiVersions), else None: the request then takes ``dispatch``."""
        handler = self.fast.get(key)
        if handler is None:
            return None
        lo_hi = self.table.get(key)
        return handler if lo_hi is not None and lo_hi[0] <= version <= lo_hi[1] else None

    def check(self, answered_elsewhere: Iterable[int] = ()) -> None:
        """Raise if an advertised API (other than ApiVersions and ``answered_elsewhere``) has no handler."""
        missing = sorted(set(self.table) - set(self.handlers) - {ApiKey.API_VERSIONS} - set(answered_elsewhere))
        if missing:
            raise ValueError(f"advertised APIs without a handler {self.where}: {missing}")

    async def dispatch(self, request: Any, ctx: Any) -> Reply | None:
        key, version = request.api_key, request.api_version
        versions = answer_api_versions(self.table, key, version, self.where)
        if versions is not None:
            if self.features is not None:
                with_features(versions, version, *self.features())
            return Reply(versions, version if versions.error_code == 0 else 0)
        handler = self.handlers.get(key)
        if handler is None:
            raise RefusedRequest(f"API {key} has no handler {self.where}")
        return await handler(request, ctx)
