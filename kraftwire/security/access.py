"""What an authorization rule sees and decides (``security/rules.py`` writes the rules, ``security/gate.py``
runs them): ``Access`` answers questions about one request's caller against the ACLs and the image, and a
rule returns an ``Outcome`` (refuse now, or let a narrowed request through and complete its answer)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID
from kraftwire.protocol.requests import RequestContext
from kraftwire.security.authorizer import CLUSTER, CLUSTER_NAME, TOPIC, AclAuthorizer


@dataclass(slots=True)
class Outcome:
    """A rule's decision: ``deny`` answers now; else dispatch ``body`` and pass the response to ``finish``."""

    deny: Any = None
    body: Any = None
    finish: Callable[[Any], Any] | None = None


class Access:
    """Authorization questions about one request's caller."""

    def __init__(self, authorizer: AclAuthorizer, ctx: RequestContext, image: MetadataImage) -> None:
        self.authorizer = authorizer
        self.principal = ctx.principal
        self.host = ctx.client_host
        self.image = image

    def allowed(self, operation: int, resource_type: int, name: str, *, log: bool = True) -> bool:
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name, log_denied=log)

    def cluster(self, operation: int, *, log: bool = True) -> bool:
        return self.allowed(operation, CLUSTER, CLUSTER_NAME, log=log)

    def topic(self, operation: int, name: str, *, log: bool = True) -> bool:
        return self.allowed(operation, TOPIC, name, log=log)

    def operations(self, resource_type: int, name: str) -> int:
        return self.authorizer.authorized_operations(self.principal, self.host, resource_type, name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        if topic_id == METADATA_TOPIC_ID:
            return METADATA_TOPIC
        t = self.image.topics.get(topic_id)
        return None if t is None else t.name

    def partition(self, items: Iterable[Any], ok: Callable[[Any], bool]) -> tuple[list[Any], list[Any]]:
        kept, denied = [], []
        for item in items:
            (kept if ok(item) else denied).append(item)
        return kept, denied


Rule = Callable[[Access, Any, int], Outcome | None]
