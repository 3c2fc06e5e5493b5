"""kraftwire.controller: the sans-I/O KRaft quorum controller (its image lives in kraftwire.metadata)."""

from kraftwire.controller.controller import QuorumController, Session
from kraftwire.controller.result import ControllerConfig, ControllerResult

__all__ = ["ControllerConfig", "ControllerResult", "QuorumController", "Session"]
