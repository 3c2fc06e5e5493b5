"""Authorization of every request a node handles, before it reaches the handler (Kafka's per-API rules).

``RequestGate.check(request, ctx)`` decides, purely, with the rule for the request's API, the
context's principal and client address and the metadata image the ACLs are read from; the node
core's door (``core/api_door.py``) applies the decision. Enveloped requests arrive with their own
(inner) context, so the same rules apply to them. A rule either

* refuses the request outright (the API's error response; nothing reaches the handler, so
  nothing is written),
* lets a subset through (e.g. the topics a CreateTopics may create) and adds error entries for
  the rest to the handler's response, or
* lets it through and filters or annotates the response (Metadata, DescribeCluster, ListGroups).

The rule table lives in ``kraftwire.security.rules``, what a rule sees and returns in ``security/access.py``. It fails closed: an API without a rule (and
not in ``skip``, the APIs a broker forwards for the controller to authorize) is refused with
CLUSTER_AUTHORIZATION_FAILED, so a newly served API cannot slip past authorization unnoticed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.requests import RequestContext
from kraftwire.security.access import Access, Outcome, Rule
from kraftwire.security.authorizer import AclAuthorizer
from kraftwire.security.rules import RULES

log = logging.getLogger(__name__)

class RequestGate:
    """Runs each request past its API's rule; APIs in ``skip`` pass unchecked, APIs without a rule are
    refused (fail closed)."""

    def __init__(self, authorizer: AclAuthorizer, image: Callable[[], MetadataImage],
                 skip: Iterable[int] = (), rules: dict[int, Rule] | None = None) -> None:
        self.authorizer = authorizer
        self.image = image
        self.skip = frozenset(skip)
        self.rules: dict[int, Rule] = dict(RULES if rules is None else rules)
        self.denied = 0
        self._unruled_logged: set[int] = set()

    def check(self, request: Request, ctx: RequestContext) -> Outcome | None:
        """The decision for one request: None lets it through unchanged; else an ``Outcome`` whose ``deny``
        (an error response body) answers it now, or whose ``body`` (a narrowed request, when not None) is
        what the handler gets and whose ``finish`` completes the handler's answer."""
        key = request.api_key
        if key in self.skip:
            return None
        rule = self.rules.get(key)
        outcome = (Outcome(deny=self._refuse_unruled(request)) if rule is None
                   else rule(Access(self.authorizer, ctx, self.image()), request.body, request.api_version))
        if outcome is not None and outcome.deny is not None:
            self.denied += 1
        return outcome

    def _refuse_unruled(self, request: Request) -> Any:
        key = request.api_key
        if key not in self._unruled_logged:
            self._unruled_logged.add(key)
            log.error("refused API %d (%s): no authorization rule is defined for it", key,
                      type(request.body).__name__)
        return request.body.error_response(request.api_version, int(Errors.CLUSTER_AUTHORIZATION_FAILED),
                                           f"no authorization rule for API {key}")
