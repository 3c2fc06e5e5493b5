"""Client quotas and dynamic configs in the controller simulation: a client sending AlterClientQuotas and
IncrementalAlterConfigs through the production controller during the faults, and the invariants they keep.

The client sends one request at a time, each about one quota entity or one topic: a valid change (set or
remove quotas of a small pool of entities; set or delete configs of a created topic), a change Kafka refuses
(``bad-`` names, invalid values, unknown keys, entity combinations Kafka forbids, a missing topic), or a valid
change with ``validate_only`` (``dry-`` entities, the ``max.message.bytes`` topic config, used nowhere else).
It stops at the heal.

* Acknowledged: a change answered with success is in the responder's committed image when it answers and,
  at the end, in every controller's and broker's image past the responder's offset then — exactly the last
  acknowledged value, for a key no unanswered request (timeout, NOT_CONTROLLER) touched; otherwise one of the
  values sent for it (or none). No key of the client's pools is set that it never sent.
* Refused and validate_only: never in any image (checked on every image), and every quota in every image
  keeps Kafka's validation (entity types and combinations, keys, values), every topic config its schema.
* Replayed once: at the end every image's quotas and configs equal those of replaying the committed log
  once, up to that image's offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftwire.controller import quotas as q
from kraftwire.controller.configs import DELETE, SET, TOPIC_CONFIGS
from kraftwire.controller.result import CommandError
from kraftwire.metadata.image import TOPIC_RESOURCE, ImageLoader, MetadataImage
from kraftwire.protocol.errors import DecodeError, Errors
from kraftwire.protocol.messages import alter_client_quotas_request as acq
from kraftwire.protocol.messages import incremental_alter_configs_request as iacq
from kraftwire.protocol.metadata import decode_record
from kraftwire.sim.invariants import Violation

if TYPE_CHECKING:
    from kraftwire.sim.controller_sim import ControllerSimulation, SimControllerShell

QUOTA_CLIENT = "quota-config"
REFUSED, DRY = "bad-", "dry-"
DRY_CONFIG = "max.message.bytes"   # set only with validate_only
VALID, INVALID, VALIDATE_ONLY = "valid", "invalid", "validate-only"
_REFUSALS = {int(Errors.INVALID_REQUEST), int(Errors.INVALID_CONFIG), int(Errors.UNKNOWN_TOPIC_OR_PARTITION)}
_ABSENT = None
Key = tuple[str, Any, str]   # ("quota", entity key, quota key) or ("config", topic, config name)


def _entity_key(entity: dict[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(entity.items()))


def check_quotas_and_configs(nid: int, which: str, image: MetadataImage) -> None:
    """What every image holds: no refused or validate_only change, quotas within Kafka's validation, topic
    configs within their schema."""
    for key, values in image.quotas.items():
        entity = dict(key)
        where = f"node {nid} {which} image: quota entity {entity}"
        if any(n is not None and n.startswith((REFUSED, DRY)) for n in entity.values()):
            raise Violation(f"{where} holds a refused or validate_only change {values}")
        try:
            keys = q.check_entity(entity)
            for k, v in values.items():
                q.check_value(keys, k, v)
        except CommandError as e:
            raise Violation(f"{where} breaks Kafka's quota validation: {e.message}") from None
    for (rtype, rname), configs in image.configs.items():
        if rtype != TOPIC_RESOURCE:
            continue
        where = f"node {nid} {which} image: topic {rname} configs {configs}"
        if rname.startswith(REFUSED) or DRY_CONFIG in configs:
            raise Violation(f"{where} hold a refused or validate_only change")
        for k, v in configs.items():
            d = TOPIC_CONFIGS.get(k)
            if d is None:
                raise Violation(f"{where}: unknown config {k}")
            try:
                d.validate(k, v)
            except ValueError as e:
                raise Violation(f"{where}: {e}") from None


def _value_in(image: MetadataImage, key: Key) -> Any:
    kind, owner, name = key
    if kind == "quota":
        return image.quotas.get(owner, {}).get(name, _ABSENT)
    return image.configs.get((TOPIC_RESOURCE, owner), {}).get(name, _ABSENT)


class QuotaConfigWorkload:
    """The quota and config client of one controller simulation and what it was told."""

    def __init__(self, sim: ControllerSimulation) -> None:
        self.sim = sim
        self.target = 1
        self.inflight: int | None = None
        self.pending: tuple[str, list[tuple[Key, Any]]] | None = None   # (kind, [(key, value sent)])
        self.acked: dict[Key, Any] = {}            # last acknowledged value (None: removed)
        self.sent: dict[Key, set[Any]] = {}        # every value a valid request sent
        self.uncertain: set[Key] = set()           # touched by a request whose outcome is unknown
        self.ack_bound = -1                        # highest responder committed offset at an acknowledgement
        self.counts = {VALID: 0, INVALID: 0, VALIDATE_ONLY: 0, "acked": 0, "refused": 0, "unknown": 0}
        self.exact_checks = 0

    def start(self) -> None:
        self.target = self.sim.rng.choice(self.sim.voter_ids)
        self.sim.wake_agent(self.sim.rng.randint(300, 700), QUOTA_CLIENT)

    def wake(self) -> None:
        sim = self.sim
        if sim.healed:
            return
        sim.wake_agent(sim.now + sim.rng.randint(30, 120), QUOTA_CLIENT)
        if self.inflight is not None:
            return
        r = sim.rng.random()
        kind = VALID if r < 0.6 else INVALID if r < 0.8 else VALIDATE_ONLY
        request = self._quota(kind) if sim.rng.random() < 0.6 else self._config(kind)
        if request is None:
            return
        self.counts[kind] += 1
        self.inflight = sim.send_agent(QUOTA_CLIENT, self.target, request)

    # requests --------------------------------------------------------------------------------
    def _quota(self, kind: str) -> Any:
        rng = self.sim.rng
        ops: dict[str, float | None] = {}
        if kind == INVALID:
            name = f"{REFUSED}{rng.randint(0, 3)}"
            entity: dict[str, str | None] = rng.choice([
                {q.USER: name}, {q.CLIENT_ID: name}, {q.IP: name}, {q.USER: ""}, {"group": name},
                {q.IP: "10.0.0.1", q.USER: name}])
            bad = rng.choice([("producer_byte_rate", -5.0), ("producer_byte_rate", 1.5), ("request_percentage", 0.0),
                              ("no_such_quota", 3.0), ("producer_byte_rate", 2.0 ** 64), ("connection_creation_rate", 4.0)])
            ops[bad[0]] = bad[1]
        else:
            pick = rng.random()
            if kind == VALIDATE_ONLY:
                entity = {q.USER: f"{DRY}{rng.randint(0, 3)}"}
            elif pick < 0.3:
                entity = {q.USER: rng.choice([f"u{rng.randint(0, 4)}", None])}
            elif pick < 0.55:
                entity = {q.CLIENT_ID: rng.choice([f"c{rng.randint(0, 3)}", None])}
            elif pick < 0.8:
                entity = {q.USER: f"u{rng.randint(0, 2)}", q.CLIENT_ID: f"c{rng.randint(0, 2)}"}
            else:
                entity = {q.IP: rng.choice([f"10.0.0.{rng.randint(0, 3)}", None])}
            names = q.IP_QUOTAS if q.IP in entity else q.USER_CLIENT_QUOTAS
            for k in rng.sample(sorted(names), rng.randint(1, min(2, len(names)))):
                if rng.random() < 0.25:
                    ops[k] = None
                elif names[k] == "double":
                    ops[k] = round(rng.uniform(0.5, 400.0), 2)
                else:
                    ops[k] = float(rng.randint(1, 10 ** 6))
        owner = _entity_key(entity)
        self.pending = (kind, [(("quota", owner, k), v) for k, v in ops.items()])
        return acq.AlterClientQuotasRequest(validate_only=kind == VALIDATE_ONLY, entries=[acq.EntryData(
            entity=[acq.EntityData(t, n) for t, n in entity.items()],
            ops=[acq.OpData(k, 0.0 if v is None else v, v is None) for k, v in ops.items()])])

    def _config(self, kind: str) -> Any:
        sim, rng = self.sim, self.sim.rng
        topics = sorted(sim.checker.acked_topics)
        if not topics:
            return None
        topic = rng.choice(topics[-6:])
        changes: dict[str, str | None] = {}
        if kind == INVALID:
            name, value = rng.choice([("retention.ms", f"{REFUSED}ms"), (f"{REFUSED}config", "1"),
                                      ("cleanup.policy", f"{REFUSED}policy"), ("retention.ms", "1000")])
            if value == "1000":
                topic = f"{REFUSED}{rng.randint(0, 3)}"   # a topic that does not exist
            changes[name] = value
        elif kind == VALIDATE_ONLY:
            changes[DRY_CONFIG] = str(rng.randint(1000, 10 ** 6))
        else:
            for name in rng.sample(["retention.ms", "segment.ms", "cleanup.policy"], rng.randint(1, 2)):
                if rng.random() < 0.25:
                    changes[name] = None
                elif name == "cleanup.policy":
                    changes[name] = rng.choice(["delete", "compact", "compact,delete"])
                else:
                    changes[name] = str(rng.randint(10 ** 4, 10 ** 8))
        self.pending = (kind, [(("config", topic, k), v) for k, v in changes.items()])
        return iacq.IncrementalAlterConfigsRequest(validate_only=kind == VALIDATE_ONLY, resources=[
            iacq.AlterConfigsResource(TOPIC_RESOURCE, topic, [
                iacq.AlterableConfig(k, DELETE if v is None else SET, v) for k, v in changes.items()])])

    # answers ---------------------------------------------------------------------------------
    @staticmethod
    def _code(response: Any) -> int:
        if hasattr(response, "entries"):
            return response.entries[0].error_code
        return response.responses[0].error_code

    def on_answer(self, seq: int, responder: SimControllerShell, response: Any) -> None:
        """When a controller answers (checked then: the answer may reach the client after the responder
        restarted with a shorter committed prefix)."""
        if seq != self.inflight or self.pending is None or self._code(response) != 0:
            return
        kind, ops = self.pending
        if kind != VALID:
            return
        image = responder.ctl.committed_image
        for key, value in ops:
            if key not in self.uncertain and _value_in(image, key) != value:
                raise Violation(f"{key[0]} change {key[1:]} = {value} acknowledged by node {responder.node.node_id} "
                                f"but its committed image holds {_value_in(image, key)}")
        self.ack_bound = max(self.ack_bound, responder.ctl.committed_offset)

    def on_response(self, seq: int, response: Any) -> None:
        if seq != self.inflight or self.pending is None:
            return
        self.inflight = None
        kind, ops = self.pending
        self.pending = None
        code = None if response is None else self._code(response)
        if kind == VALID:
            for key, value in ops:
                self.sent.setdefault(key, set()).add(value)
        if code is None or code == int(Errors.NOT_CONTROLLER):
            self.target = self.sim.retarget(self.target)
            self.counts["unknown"] += 1
            if kind == VALID:
                self.uncertain.update(key for key, _ in ops)
            return
        what = f"{kind} {ops[0][0][0]} change {[(k[1:], v) for k, v in ops]}"
        if code == 0:
            if kind == INVALID:
                raise Violation(f"{what} acknowledged")
            self.counts["acked"] += 1
            if kind == VALID:
                self.acked.update(ops)
            return
        if kind == INVALID and code in _REFUSALS:
            self.counts["refused"] += 1
            return
        raise Violation(f"{what}: unexpected error {Errors(code).name}")

    # the end ---------------------------------------------------------------------------------
    def check_end(self, images: list[tuple[int, MetadataImage, int]], committed: list[tuple[int, bytes | None]]) -> None:
        """After the heal: acknowledged changes everywhere past the acknowledgements, and every image's
        quotas and configs equal to replaying the committed log once up to its offset."""
        replayed = _replay_at(committed, sorted({offset for _, _, offset in images}))
        for nid, image, offset in images:
            expected = replayed[offset]
            if image.quotas != expected.quotas or image.configs != expected.configs:
                raise Violation(f"node {nid}: quotas/configs at offset {offset} differ from replaying the committed "
                                f"log once ({image.quotas} / {image.configs} vs {expected.quotas} / {expected.configs})")
            if offset < self.ack_bound:
                continue
            for key in self.sent.keys() | self.acked.keys():
                value = _value_in(image, key)
                if key in self.uncertain:
                    if value is not _ABSENT and value not in self.sent[key]:
                        raise Violation(f"node {nid}: {key} = {value} was never sent")
                elif value != self.acked.get(key, _ABSENT):
                    raise Violation(f"node {nid}: acknowledged {key[0]} change {key[1:]} = "
                                    f"{self.acked.get(key, _ABSENT)} but its image holds {value}")
                else:
                    self.exact_checks += 1
            self._nothing_unsent(nid, image)

    def _nothing_unsent(self, nid: int, image: MetadataImage) -> None:
        for owner, values in image.quotas.items():
            for k in values:
                if ("quota", owner, k) not in self.sent:
                    raise Violation(f"node {nid}: quota {dict(owner)} {k} = {values[k]} was never sent")
        for (rtype, rname), configs in image.configs.items():
            for k in configs if rtype == TOPIC_RESOURCE else ():
                if ("config", rname, k) not in self.sent:
                    raise Violation(f"node {nid}: topic {rname} config {k} = {configs[k]} was never sent")


def _replay_at(committed: list[tuple[int, bytes | None]], offsets: list[int]) -> dict[int, MetadataImage]:
    """The image of replaying the committed log once, at each of ``offsets`` (ascending)."""
    loader, out, at = ImageLoader(), {}, 0
    for offset in offsets:
        while at <= offset and at < len(committed):
            value = committed[at][1]
            at += 1
            if value is None:
                continue
            try:
                record = decode_record(value)
            except DecodeError:
                continue   # a control record
            loader.replay(record.message)
        out[offset] = loader.image
    return out
