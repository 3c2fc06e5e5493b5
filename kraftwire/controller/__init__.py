"""kraftwire.controller: the sans-I/O KRaft quorum controller (its image lives in kraftwire.metadata)."""

from kraftwire.controller.controller import QuorumController
from kraftwire.controller.result import ControllerConfig, ControllerResult
from kraftwire.controller.sessions import Session

__all__ = ["ControllerConfig", "ControllerResult", "QuorumController", "Session"]
