"""Real admin clients that follow Metadata, creating topics at the voters: do they reach the active controller?

A client kind (librdkafka through confluent-kafka, kafka-python) is bootstrapped at every voter's
listener and, for a while after a fault, sends one validate-only CreateTopics after another. Any answer
other than NOT_CONTROLLER (the create is valid, or the controller refuses it for a reason of its own,
such as INVALID_REPLICATION_FACTOR with every broker fenced) means it reached the active controller. A
client may get one NOT_CONTROLLER after a leader change (the answer that makes it look again); every
further one is counted in ``beyond_first``, the figure that must stay 0 (issue #23 item 6).
"""

from __future__ import annotations

import importlib.util
import itertools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

NOT_CONTROLLER = 41
_names = itertools.count()


@dataclass
class Tally:
    kind: str
    reached: int = 0                # answers from the active controller
    not_controller: int = 0
    beyond_first: int = 0           # NOT_CONTROLLER answers after the first of a probe window
    other: Counter = field(default_factory=Counter)   # client-side timeouts, transport errors

    def add(self, other: Tally) -> None:
        self.reached += other.reached
        self.not_controller += other.not_controller
        self.beyond_first += other.beyond_first
        self.other.update(other.other)

    def line(self) -> str:
        rest = ", ".join(f"{k}={v}" for k, v in sorted(self.other.items()))
        return (f"{self.kind}: reached={self.reached} not_controller={self.not_controller} "
                f"beyond_first={self.beyond_first}" + (f" other: {rest}" if rest else ""))


class _Confluent:
    kind = "confluent-kafka"

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000, "log_level": 3})

    def create(self, name: str) -> int | str:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        future = self.admin.create_topics([NewTopic(name, 1, 1)], request_timeout=3, operation_timeout=3,
                                          validate_only=True)[name]
        try:
            future.result()
            return 0
        except KafkaException as e:
            err = e.args[0]
            return err.code() if err.code() >= 0 else err.name()


class _KafkaPython:
    kind = "kafka-python"

    def __init__(self, bootstrap: str) -> None:
        from kafka.admin import KafkaAdminClient

        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=3000,
                                      client_id="kraftwire-chaos-probe")

    def create(self, name: str) -> int | str:
        from kafka.errors import KafkaError

        try:
            result = self.admin.create_topics({name: {"num_partitions": 1, "replication_factor": 1}},
                                              validate_only=True, raise_errors=False)
        except KafkaError as e:
            return type(e).__name__
        return result["topics"][0]["error_code"]

    def close(self) -> None:
        self.admin.close()


CLIENTS: dict[str, tuple[str, Callable[[str], object]]] = {
    "confluent-kafka": ("confluent_kafka", _Confluent),
    "kafka-python": ("kafka", _KafkaPython),
}


def available_kinds() -> list[str]:
    return [kind for kind, (module, _) in CLIENTS.items() if importlib.util.find_spec(module) is not None]


class AdminProbe:
    """One long-lived client of ``kind`` (it keeps what it learned between windows, as an application does)."""

    def __init__(self, kind: str, bootstrap: str) -> None:
        self.kind = kind
        self.client = CLIENTS[kind][1](bootstrap)
        self.total = Tally(kind)

    def window(self, seconds: float, pause_s: float = 0.1) -> Tally:
        """Create topics for ``seconds``; blocking (run it in a thread from async code)."""
        tally = Tally(self.kind)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            code = self.client.create(f"probe-{self.kind}-{next(_names)}")   # type: ignore[attr-defined]
            if code == NOT_CONTROLLER:
                tally.not_controller += 1
                if tally.not_controller > 1:
                    tally.beyond_first += 1
            elif isinstance(code, int):
                tally.reached += 1
            else:
                tally.other[str(code)] += 1
            time.sleep(pause_s)
        self.total.add(tally)
        return tally

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()
