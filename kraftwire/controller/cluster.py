"""Broker and controller membership: registration, heartbeats, fencing, controlled shutdown (KIP-631)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kraftwire.controller.elr import change_options, elr_enabled
from kraftwire.controller.partition_change import build_change
from kraftwire.controller.result import CommandError, ControllerResult
from kraftwire.controller.sessions import Session, touch_session
from kraftwire.metadata.features import (
    METADATA_VERSION,
    MINIMUM_KRAFT_LEVEL,
    MV_CONTROLLER_REGISTRATION,
    RecordVersions,
    wrap,
)
from kraftwire.metadata.image import MIGRATING_DIR, UNASSIGNED_DIR, MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.messages.broker_registration_response import BrokerRegistrationResponse
from kraftwire.protocol.messages.controller_registration_response import ControllerRegistrationResponse
from kraftwire.protocol.messages.fence_broker_record import FenceBrokerRecord
from kraftwire.protocol.messages.register_broker_record import (
    BrokerEndpoint,
    BrokerFeature,
    RegisterBrokerRecord,
)
from kraftwire.protocol.messages.register_controller_record import (
    ControllerEndpoint,
    ControllerFeature,
    RegisterControllerRecord,
)
from kraftwire.protocol.messages.unfence_broker_record import UnfenceBrokerRecord
from kraftwire.protocol.messages.unregister_broker_record import UnregisterBrokerRecord
from kraftwire.protocol.messages.unregister_broker_response import UnregisterBrokerResponse
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

log = logging.getLogger("kraftwire.controller")

Records = list[MetadataRecord]

# Broker control states (Kafka's BrokerControlState): (fenced, in controlled shutdown, shut down now)
FENCED, UNFENCED, CONTROLLED_SHUTDOWN, SHUTDOWN_NOW = "fenced", "unfenced", "controlled_shutdown", "shutdown_now"


def check_broker_epoch(image: MetadataImage, broker_id: int, epoch: int) -> None:
    b = image.brokers.get(broker_id)
    if b is None:
        raise CommandError(Errors.STALE_BROKER_EPOCH, f"no broker registration found for broker {broker_id}")
    if b.epoch != epoch:
        raise CommandError(Errors.STALE_BROKER_EPOCH,
                           f"expected broker epoch {b.epoch} for broker {broker_id}, got {epoch}")


def has_valid_session(ctl: QuorumController, broker_id: int, now: int) -> bool:
    """Kafka's rule: the holder of an ID is live while unfenced and within its lease."""
    s = ctl.sessions.get(broker_id)
    b = ctl.image.brokers.get(broker_id)
    if s is None or b is None or b.fenced:
        return False
    return s.last_seen_ms + ctl.config.session_timeout_ms >= now


def _check_features(image: MetadataImage, broker_id: int, offered: dict[str, tuple[int, int]]) -> None:
    finalized = dict(image.features)
    for name, level in finalized.items():
        lo, hi = offered.get(name, (0, 0))
        if level and not lo <= level <= hi:
            raise CommandError(Errors.UNSUPPORTED_VERSION,
                               f"unable to register because the broker does not support finalized "
                               f"version {level} of {name}; its supported range is {lo}-{hi}")
    for name, (lo, hi) in offered.items():
        level = finalized.get(name, 0)
        if not lo <= level <= hi:
            raise CommandError(Errors.UNSUPPORTED_VERSION,
                               f"unable to register because the broker supports {name} {lo}-{hi} "
                               f"but the finalized level is {level}")


def register_broker(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    cfg = ctl.config
    if cfg.cluster_id and req.cluster_id != cfg.cluster_id:
        raise CommandError(Errors.INCONSISTENT_CLUSTER_ID,
                           f"expected cluster ID {cfg.cluster_id}, got {req.cluster_id}")
    bid = req.broker_id
    existing = image.brokers.get(bid)
    if (existing is not None and has_valid_session(ctl, bid, now)
            and req.incarnation_id != existing.incarnation_id):
        raise CommandError(Errors.DUPLICATE_BROKER_REGISTRATION,
                           "another broker is registered with that broker id")
    if req.is_migrating_zk_broker:
        raise CommandError(Errors.BROKER_ID_NOT_REGISTERED, "ZooKeeper brokers cannot register")
    versions = RecordVersions(image.metadata_version)
    if versions.directories:
        dirs = list(req.log_dirs)
        if not dirs:
            raise CommandError(Errors.INVALID_REGISTRATION, "no directories specified in request")
        if any(d.int < 100 for d in dirs):
            raise CommandError(Errors.INVALID_REGISTRATION, "reserved directory ID in request")
        wanted = set(dirs)
        if len(wanted) != len(dirs):
            raise CommandError(Errors.INVALID_REGISTRATION, "duplicate directory ID in request")
        other = ctl.dirs.owner(image, dirs, bid)   # an index, not a scan of every registration
        if other is not None:
            raise CommandError(Errors.INVALID_REGISTRATION,
                               f"broker {other} is already registered with one of these directories")
    offered = {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}
    features = [BrokerFeature(f.name, f.min_supported_version, f.max_supported_version) for f in req.features]
    if METADATA_VERSION not in offered:
        offered[METADATA_VERSION] = (MINIMUM_KRAFT_LEVEL, MINIMUM_KRAFT_LEVEL)
        features.append(BrokerFeature(METADATA_VERSION, MINIMUM_KRAFT_LEVEL, MINIMUM_KRAFT_LEVEL))
    _check_features(image, bid, offered)
    rec = RegisterBrokerRecord(
        broker_id=bid, incarnation_id=req.incarnation_id, rack=req.rack,
        end_points=[BrokerEndpoint(x.name, x.host, x.port, x.security_protocol) for x in req.listeners],
        features=features, log_dirs=list(req.log_dirs) if versions.directories else [],
    )
    same = existing is not None and existing.incarnation_id == req.incarnation_id
    if same:
        rec.broker_epoch = existing.epoch  # type: ignore[union-attr]
        rec.fenced = existing.fenced  # type: ignore[union-attr]
        rec.in_controlled_shutdown = existing.in_controlled_shutdown and versions.in_controlled_shutdown  # type: ignore[union-attr]
    else:
        rec.broker_epoch = ctl.next_offset
        ctl.sessions.pop(bid, None)
    s = ctl.sessions.get(bid)
    if s is None:
        ctl.sessions[bid] = Session(now)
    else:
        touch_session(ctl.sessions, bid, s, now)
    records: Records = [wrap(rec, versions.register_broker)]
    if not same:
        how = ("" if existing is None else "; it names its previous epoch (clean shutdown)"
               if req.previous_broker_epoch == existing.epoch else "; its previous incarnation is gone (unclean shutdown)")
        log.info("Registering broker %d (incarnation %s, epoch %d, listeners %s)%s", bid, req.incarnation_id,
                 rec.broker_epoch, ", ".join(f"{x.name}://{x.host}:{x.port}" for x in req.listeners), how)
    if existing is not None and not same:
        # A new incarnation means the old process is gone. With ELR on, Kafka 4.1 trusts a broker that
        # names its previous epoch (a clean shutdown) to keep its ISR and ELR seats; otherwise it leaves
        # both and may not join an ELR (handleBrokerShutdown). With ELR off the registration must not
        # keep leading or sit in ISRs.
        if not elr_enabled(image):
            records.extend(remove_from_isrs(ctl, bid))
        elif req.previous_broker_epoch != existing.epoch:
            records.extend(remove_from_isrs(ctl, bid, unclean=True))
    return records, BrokerRegistrationResponse(broker_epoch=rec.broker_epoch)


def _active_pred(image: MetadataImage, exclude: int = -1, include: int = -1) -> Callable[[int], bool]:
    brokers = image.brokers

    def ok(r: int) -> bool:
        if r == exclude:
            return False
        if r == include:
            return True
        b = brokers.get(r)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    return ok


def remove_from_isrs(ctl: QuorumController, broker_id: int, *, unclean: bool = False,
                     elrs: bool = False) -> Records:
    """PartitionChangeRecords taking ``broker_id`` out of every ISR and away from every leadership.

    With ELR on, a replica leaving an ISR below min ISR joins the ELR, unless ``unclean`` (its shutdown
    was unclean: it leaves ELRs too and may not lead); ``elrs`` also visits the ELRs it is in (the
    broker unregisters).
    """
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    ok = _active_pred(image, exclude=broker_id)
    v = versions.partition_change
    static, node = ctl.config.static_broker_configs, ctl.config.node_id
    out: Records = []
    for tid, t in image.topics.items():
        opts = None
        for pid, p in t.partitions.items():
            if broker_id in p.isr or p.leader == broker_id or ((unclean or elrs) and broker_id in p.elr):
                if opts is None:
                    opts = change_options(image, t, static, node)
                isr = [r for r in p.isr if r != broker_id]
                if unclean:
                    rec = build_change(tid, pid, p, ok, versions, target_isr=isr,
                                       unclean_shutdown=[broker_id], **opts)
                else:
                    rec = build_change(tid, pid, p, ok, versions, target_isr=isr, **opts)
                if rec is not None:
                    out.append(MetadataRecord(5, v, rec))
    return out


def fence_records(ctl: QuorumController, broker_id: int) -> Records:
    """Fence a broker: leave ISRs and leaderships, then the fencing registration change."""
    image = ctl.image
    b = image.brokers[broker_id]
    out = remove_from_isrs(ctl, broker_id)
    log.info("Fencing broker %d (epoch %d): it leaves %d partition leaderships/ISRs", broker_id, b.epoch, len(out))
    if RecordVersions(image.metadata_version).registration_changes:
        out.append(wrap(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=b.epoch, fenced=1)))
    else:
        out.append(wrap(FenceBrokerRecord(id_=broker_id, epoch=b.epoch)))
    return out


def unfence_records(ctl: QuorumController, broker_id: int) -> Records:
    """Unfence a broker, then give leaderless partitions a leader (it may now be eligible)."""
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    b = image.brokers[broker_id]
    if versions.registration_changes:
        out = [wrap(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=b.epoch, fenced=-1))]
    else:
        out = [wrap(UnfenceBrokerRecord(id_=broker_id, epoch=b.epoch))]
    log.info("Unfencing broker %d (epoch %d): it caught up with the metadata log", broker_id, b.epoch)
    ok = _active_pred(image, include=broker_id)
    static, node = ctl.config.static_broker_configs, ctl.config.node_id
    for tid, pid in sorted(ctl.index.leaderless):
        t = image.topics.get(tid)
        p = None if t is None else t.partitions.get(pid)
        if p is None or t is None:
            continue
        rec = build_change(tid, pid, p, ok, versions, **change_options(image, t, static, node))
        if rec is not None:
            out.append(MetadataRecord(5, versions.partition_change, rec))
    return out


def controlled_shutdown_records(ctl: QuorumController, broker_id: int) -> Records:
    image = ctl.image
    versions = RecordVersions(image.metadata_version)
    b = image.brokers[broker_id]
    out: Records = []
    if versions.in_controlled_shutdown and not b.in_controlled_shutdown:
        out.append(wrap(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=b.epoch,
                                                       in_controlled_shutdown=1), 1))
    moves = remove_from_isrs(ctl, broker_id)
    log.info("Broker %d (epoch %d) is in controlled shutdown: moving %d partition leaderships/ISRs away",
             broker_id, b.epoch, len(moves))
    out.extend(moves)
    return out


def _current_state(ctl: QuorumController, broker_id: int) -> str:
    b = ctl.image.brokers[broker_id]
    s = ctl.sessions.get(broker_id)
    if not b.fenced and (b.in_controlled_shutdown or (s is not None and s.shutdown_offset >= 0)):
        return CONTROLLED_SHUTDOWN
    return FENCED if b.fenced else UNFENCED


def _lowest_active_offset(ctl: QuorumController) -> int:
    brokers = ctl.image.brokers
    low = None
    for bid, s in ctl.sessions.items():
        b = brokers.get(bid)
        # shutting-down brokers do not count (below 3.3-IV3 the image cannot tell; the session can)
        if b is not None and b.active and s.shutdown_offset < 0:
            low = s.metadata_offset if low is None else min(low, s.metadata_offset)
    return (1 << 63) - 1 if low is None else low


def _next_state(ctl: QuorumController, broker_id: int, req: Any, reg_offset: int) -> tuple[str, str]:
    cur = _current_state(ctl, broker_id)
    leads = ctl.index.leaders.get(broker_id, 0) > 0
    if cur == FENCED:
        if req.want_shut_down:
            return cur, SHUTDOWN_NOW
        if not req.want_fence and req.current_metadata_offset >= reg_offset:
            return cur, UNFENCED
        return cur, FENCED
    if cur == UNFENCED:
        if req.want_fence:
            return cur, SHUTDOWN_NOW if req.want_shut_down else FENCED
        if req.want_shut_down:
            return cur, CONTROLLED_SHUTDOWN if leads else SHUTDOWN_NOW
        return cur, UNFENCED
    # controlled shutdown: done once it leads nothing and every active broker has seen its start
    if leads:
        return cur, CONTROLLED_SHUTDOWN
    s = ctl.sessions[broker_id]
    if s.shutdown_offset <= _lowest_active_offset(ctl):
        return cur, SHUTDOWN_NOW
    return cur, CONTROLLED_SHUTDOWN


def heartbeat(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    bid = req.broker_id
    check_broker_epoch(image, bid, req.broker_epoch)
    s = ctl.sessions.get(bid)
    if s is None:
        s = ctl.sessions[bid] = Session(now)
    reg_offset = ctl.register_offset(bid)
    if reg_offset is None:
        reg_offset = image.brokers[bid].epoch
    cur, nxt = _next_state(ctl, bid, req, reg_offset)
    records: Records = []
    if cur != nxt:
        if nxt in (FENCED, SHUTDOWN_NOW):
            if not image.brokers[bid].fenced:
                records = fence_records(ctl, bid)
        elif nxt == UNFENCED:
            records = unfence_records(ctl, bid)
        elif nxt == CONTROLLED_SHUTDOWN:
            records = controlled_shutdown_records(ctl, bid)
    touch_session(ctl.sessions, bid, s, now)
    s.metadata_offset = req.current_metadata_offset
    if req.offline_log_dirs and RecordVersions(image.metadata_version).directories:
        from kraftwire.controller.directories import directories_offline

        records = records + directories_offline(ctl, bid, req.broker_epoch, list(req.offline_log_dirs))
    resp = BrokerHeartbeatResponse(
        is_caught_up=req.current_metadata_offset >= reg_offset,
        is_fenced=nxt in (FENCED, SHUTDOWN_NOW),
        should_shut_down=nxt == SHUTDOWN_NOW,
    )
    ctl.last_heartbeat_state = nxt  # read by after_heartbeat
    return records, resp


def after_heartbeat(ctl: QuorumController, req: Any, result: ControllerResult) -> None:
    """Remember where controlled shutdown started (end offset of this heartbeat's batch)."""
    nxt, ctl.last_heartbeat_state = ctl.last_heartbeat_state, None
    if nxt is None:
        return
    s = ctl.sessions.get(req.broker_id)
    if s is None:
        return
    if nxt == CONTROLLED_SHUTDOWN and s.shutdown_offset < 0:
        s.shutdown_offset = ctl.next_offset - 1
    elif nxt != CONTROLLED_SHUTDOWN:
        s.shutdown_offset = -1


def find_stale_broker(ctl: QuorumController, now: int) -> int | None:
    """The unfenced broker whose lease (broker.session.timeout.ms) ran out longest ago, if any.

    Sessions are ordered by last contact, so the scan stops at the first one still within its lease.
    Only unfenced brokers expire (Kafka's heartbeat manager keeps just those in its expiry list): a
    fenced broker's session whose lease ran out is renewed and moved to the back on the way, so
    thousands of registered brokers that have not heartbeated yet are passed once per session
    timeout, not at every look. Nothing reads a fenced broker's lease (``has_valid_session`` is
    false for it) and the heartbeat that unfences it renews it anyway."""

    timeout = ctl.config.session_timeout_ms
    brokers = ctl.image.brokers
    sessions = ctl.sessions
    for _ in range(len(sessions)):
        bid = next(iter(sessions))
        s = sessions[bid]
        if s.last_seen_ms + timeout >= now:
            return None
        b = brokers.get(bid)
        if b is not None and not b.fenced:
            return bid
        touch_session(sessions, bid, s, now)
    return None


def unregister_broker(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    b = image.brokers.get(req.broker_id)
    if b is None:
        raise CommandError(Errors.BROKER_ID_NOT_REGISTERED,
                           f"broker ID {req.broker_id} is not currently registered")
    out = remove_from_isrs(ctl, b.id, elrs=True)
    out.append(wrap(UnregisterBrokerRecord(broker_id=b.id, broker_epoch=b.epoch)))
    ctl.sessions.pop(b.id, None)
    return out, UnregisterBrokerResponse(error_message=None)


def register_controller(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    if image.metadata_version < MV_CONTROLLER_REGISTRATION:
        raise CommandError(Errors.UNSUPPORTED_VERSION,
                           "controller registration needs metadata.version 3.7-IV0 or later")
    offered = {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}
    lo, hi = offered.get(METADATA_VERSION, (MINIMUM_KRAFT_LEVEL, MINIMUM_KRAFT_LEVEL))
    if not lo <= image.metadata_version <= hi:
        raise CommandError(Errors.UNSUPPORTED_VERSION,
                           f"controller does not support metadata.version {image.metadata_version}")
    rec = RegisterControllerRecord(
        controller_id=req.controller_id, incarnation_id=req.incarnation_id,
        zk_migration_ready=req.zk_migration_ready,
        end_points=[ControllerEndpoint(x.name, x.host, x.port, x.security_protocol) for x in req.listeners],
        features=[ControllerFeature(f.name, f.min_supported_version, f.max_supported_version)
                  for f in req.features],
    )
    log.info("Registering controller %d (incarnation %s, listeners %s)", req.controller_id, req.incarnation_id,
             ", ".join(f"{x.name}://{x.host}:{x.port}" for x in req.listeners))
    return [wrap(rec)], ControllerRegistrationResponse(error_message=None)


def default_dir(image: MetadataImage, broker_id: int) -> Any:
    """Kafka's default directory for a replica: the broker's only log dir, else unassigned."""
    b = image.brokers.get(broker_id)
    if b is None:
        return UNASSIGNED_DIR
    if not b.directories:
        return MIGRATING_DIR
    return b.directories[0] if len(b.directories) == 1 else UNASSIGNED_DIR
