"""The API registry: which request/response classes belong to an API key, and header versions."""

from __future__ import annotations

from functools import cache
from typing import Any

from kraftwire.protocol.messages import REQUESTS, RESPONSES, message_class
from kraftwire.protocol.messages.api_keys import LISTENERS, ApiKey

__all__ = ["API_KEYS", "API_NAMES", "LISTENERS", "ApiKey", "is_flexible", "is_known", "request_class",
           "request_header_version", "response_class", "response_header_version"]

API_KEYS: dict[str, int] = {name[: -len("Request")]: key for key, name in REQUESTS.items()}
API_NAMES: dict[int, str] = {key: name for name, key in API_KEYS.items()}
CONTROLLED_SHUTDOWN_KEY = 7   # no layout here (a ZooKeeper-era API), but its v0 header is special


@cache
def request_class(api_key: int) -> Any:
    return message_class(REQUESTS[api_key])


@cache
def response_class(api_key: int) -> Any:
    return message_class(RESPONSES[api_key])


def is_known(api_key: int) -> bool:
    return api_key in REQUESTS


def is_flexible(api_key: int, version: int) -> bool:
    flex = request_class(api_key).FLEXIBLE_MIN_VERSION
    return flex >= 0 and version >= flex


def request_header_version(api_key: int, version: int) -> int:
    """Header v2 for flexible request versions, else v1 (v0 only for ControlledShutdown v0)."""
    if api_key == CONTROLLED_SHUTDOWN_KEY and version == 0:
        return 0
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """Header v1 for flexible versions, else v0; ApiVersions responses always use v0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0
