"""Analytics over metadata log rows, as Spark DataFrame transformations (no Python UDFs).

Every job takes the *events* frame (``events(df)``): the log's records in log order, with a
snapshot standing in for the records below the log start when older segments were deleted. Times are the
record timestamps (UTC); ``*_ms`` columns are epoch milliseconds, intervals are ``[start, end)``
and an interval still open at the end of the log has a null end.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kraftwire.analytics.rows import SNAPSHOT

ORDER = ("pos", "offset")
BROKER_RECORDS = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
                  "UnfenceBrokerRecord", "UnregisterBrokerRecord")
PARTITION_RECORDS = ("PartitionRecord", "PartitionChangeRecord")
LEADER_CHANGE = "LeaderChangeMessage"


@dataclass(frozen=True, slots=True)
class Baseline:
    """Where the events start: the log start offset and the snapshot used below it (if any)."""

    log_start: int | None
    snapshot_end: int | None


def baseline(df: DataFrame) -> Baseline:
    """The log's first offset and, when that is not 0, the snapshot standing in for the records
    below it: the oldest one ending at or after the log start (so as many records as possible stay
    events), or the newest one if the log holds no records at all."""
    row = df.agg(
        F.min(F.when(F.col("source_type") != SNAPSHOT, F.col("offset"))).alias("start"),
        F.collect_set(F.when(F.col("source_type") == SNAPSHOT, F.col("snapshot_end_offset"))).alias("snaps"),
    ).collect()[0]
    start = row["start"]
    snaps = sorted(row["snaps"] or [])
    if start == 0 or not snaps:
        return Baseline(start, None)
    if start is None:
        return Baseline(None, snaps[-1])
    covering = [s for s in snaps if s >= start]
    return Baseline(start, covering[0] if covering else None)


def events(df: DataFrame, base: Baseline | None = None) -> DataFrame:
    """Decodable records in log order: ``pos`` orders them (snapshot rows share their snapshot's
    last offset, ordered among themselves by ``offset``) and ``from_snapshot`` marks baseline rows."""
    base = base or baseline(df)
    ok = F.col("error").isNull() & F.col("record_type").isNotNull()
    is_snap = F.col("source_type") == SNAPSHOT
    if base.snapshot_end is None:
        keep = ~is_snap
    else:
        keep = ((is_snap & (F.col("snapshot_end_offset") == base.snapshot_end))
                | (~is_snap & (F.col("offset") >= base.snapshot_end)))
    pos = F.when(is_snap, F.col("snapshot_end_offset") - 1).otherwise(F.col("offset"))
    return df.filter(ok & keep).withColumn("pos", pos).withColumn("from_snapshot", is_snap)


def _ms_to_ts(col: str) -> Column:
    return F.timestamp_millis(F.col(col))


# -- brokers -----------------------------------------------------------------------------------------------
def _broker_states(ev: DataFrame) -> DataFrame:
    """One row per record that changes a broker's state, with the state it enters."""
    rt = F.col("record_type")
    state = (F.when(rt == "UnregisterBrokerRecord", F.lit("unregistered"))
             .when(F.col("fenced") == F.lit(True), F.lit("fenced"))
             .when(F.col("in_controlled_shutdown") == F.lit(True), F.lit("controlled_shutdown"))
             .when(F.col("fenced") == F.lit(False), F.lit("unfenced")))
    w = Window.partitionBy("broker_id").orderBy(*ORDER)
    return (ev.filter(rt.isin(*BROKER_RECORDS) & F.col("broker_id").isNotNull())
            .withColumn("state", state).filter(F.col("state").isNotNull())
            .withColumn("new_registration", (rt == "RegisterBrokerRecord")
                        & F.coalesce(F.lag("broker_epoch").over(w) != F.col("broker_epoch"), F.lit(True)))
            .select("broker_id", "broker_epoch", "state", "new_registration", "timestamp_ms", "offset", "pos",
                    "from_snapshot"))


def _intervals(changes: DataFrame, state: Column) -> DataFrame:
    w = Window.partitionBy("broker_id").orderBy(*ORDER)
    nxt_state = F.lead("state").over(w)
    nxt_reg = F.lead("new_registration").over(w)
    return (changes.withColumn("previous_state", F.lag("state").over(w))
            .withColumn("end_ms", F.lead("timestamp_ms").over(w))
            .withColumn("end_offset", F.lead("offset").over(w))
            .withColumn("ended_by", F.when(nxt_reg, F.lit("reregistered")).otherwise(nxt_state))
            .withColumn("state", state))


def membership(ev: DataFrame) -> DataFrame:
    """Per broker: ``registered`` intervals (one per registration epoch, until unregistration or the
    next registration) and the fenced / unfenced / controlled_shutdown intervals within them."""
    changes = _broker_states(ev)
    w = Window.partitionBy("broker_id").orderBy(*ORDER)
    # State intervals: drop records that repeat the current state of the same registration.
    states = (changes.withColumn("_prev", F.lag("state").over(w))
              .filter(F.coalesce((F.col("_prev") != F.col("state")) | F.col("new_registration"), F.lit(True)))
              .drop("_prev"))
    state_iv = _intervals(states, F.col("state")).filter(F.col("state") != "unregistered")
    regs = changes.filter(F.col("new_registration") | (F.col("state") == "unregistered"))
    reg_iv = (_intervals(regs, F.col("state"))
              .filter(F.col("state") != "unregistered")
              .withColumn("previous_state", F.lit(None).cast("string"))
              .withColumn("ended_by", F.when(F.col("ended_by").isNull(), F.lit(None))
                          .when(F.col("ended_by") == "unregistered", F.lit("unregistered"))
                          .otherwise(F.lit("reregistered")))
              .withColumn("state", F.lit("registered")))
    cols = ["broker_id", "broker_epoch", "state", "timestamp_ms", "end_ms", "offset", "end_offset",
            "previous_state", "ended_by", "new_registration", "from_snapshot"]
    both = state_iv.select(*cols).unionByName(reg_iv.select(*cols))
    return (both.withColumnRenamed("timestamp_ms", "start_ms").withColumnRenamed("offset", "start_offset")
            .withColumn("duration_ms", F.col("end_ms") - F.col("start_ms"))
            .withColumn("start", _ms_to_ts("start_ms")).withColumn("end", _ms_to_ts("end_ms"))
            .select("broker_id", "broker_epoch", "state", "start", "end", "start_ms", "end_ms", "duration_ms",
                    "start_offset", "end_offset", "previous_state", "ended_by", "new_registration",
                    "from_snapshot"))


def fencing(ev: DataFrame, members: DataFrame | None = None) -> DataFrame:
    """Fenced intervals with their cause: ``registration`` (fenced from registering until the first
    unfencing), ``controlled_shutdown`` (fenced at the end of one) or ``fenced_while_active`` (lease
    expiry or a broker asking to be fenced)."""
    m = members if members is not None else membership(ev)
    cause = (F.when(F.col("new_registration"), F.lit("registration"))
             .when(F.col("previous_state") == "controlled_shutdown", F.lit("controlled_shutdown"))
             .otherwise(F.lit("fenced_while_active")))
    return (m.filter(F.col("state") == "fenced").withColumn("cause", cause)
            .select("broker_id", "broker_epoch", "cause", "start", "end", "start_ms", "end_ms", "duration_ms",
                    "start_offset", "end_offset", "previous_state", "ended_by", "from_snapshot"))


# -- raft ----------------------------------------------------------------------------------------------------
def elections(ev: DataFrame) -> DataFrame:
    """Raft leader elections seen as LeaderChange control records: the epoch, the elected leader,
    voters, epochs skipped since the previous election (elections that elected nobody) and the gap
    from the previous epoch's last record to this one's first (time without a leader writing)."""
    log = ev.filter(~F.col("from_snapshot"))
    per_epoch = (log.groupBy("leader_epoch")
                 .agg(F.max("timestamp_ms").alias("epoch_last_ms"), F.count("*").alias("epoch_records"),
                      F.max("offset").alias("epoch_last_offset")))
    msg = F.from_json("json", "struct<leader_id:int, voters:array<struct<voter_id:int>>, "
                              "granting_voters:array<struct<voter_id:int>>>")
    w = Window.orderBy(*ORDER)
    lc = (log.filter(F.col("record_type") == LEADER_CHANGE)
          .withColumn("m", msg)
          .select(F.col("leader_epoch").alias("epoch"), F.col("leader").alias("leader_id"),
                  F.col("m.voters.voter_id").alias("voters"),
                  F.col("m.granting_voters.voter_id").alias("granting_voters"),
                  "timestamp_ms", "offset", "pos")
          .withColumn("previous_epoch", F.lag("epoch").over(w))
          .withColumn("previous_leader", F.lag("leader_id").over(w)))
    prev = per_epoch.select(F.col("leader_epoch").alias("previous_epoch"), "epoch_last_ms",
                            F.col("epoch_records").alias("previous_epoch_records"))
    own = per_epoch.select(F.col("leader_epoch").alias("epoch"), F.col("epoch_records").alias("records"))
    return (lc.join(prev, "previous_epoch", "left").join(own, "epoch", "left")
            .withColumn("epochs_skipped", F.col("epoch") - F.col("previous_epoch") - 1)
            .withColumn("gap_ms", F.col("timestamp_ms") - F.col("epoch_last_ms"))
            .withColumn("time", _ms_to_ts("timestamp_ms"))
            .select("epoch", "leader_id", "time", "timestamp_ms", "offset", "voters", "granting_voters",
                    "previous_epoch", "previous_leader", "epochs_skipped", "gap_ms", "previous_epoch_records",
                    "records")
            .orderBy("offset"))


# -- partitions and topics ---------------------------------------------------------------------------------
def topic_names(ev: DataFrame) -> DataFrame:
    w = Window.partitionBy("topic_id").orderBy(F.col("pos").desc(), F.col("offset").desc())
    return (ev.filter(F.col("record_type") == "TopicRecord")
            .withColumn("n", F.row_number().over(w)).filter("n = 1").select("topic_id", "topic_name"))


def isr_changes(ev: DataFrame) -> DataFrame:
    """Every ISR change: members removed/added against the partition's previous ISR."""
    w = (Window.partitionBy("topic_id", "partition").orderBy(*ORDER)
         .rowsBetween(Window.unboundedPreceding, -1))
    prev = F.last("isr", ignorenulls=True).over(w)
    return (ev.filter(F.col("record_type").isin(*PARTITION_RECORDS))
            .withColumn("previous_isr", prev)
            .filter(F.col("isr").isNotNull() & F.col("previous_isr").isNotNull())
            .withColumn("removed", F.size(F.array_except("previous_isr", "isr")))
            .withColumn("added", F.size(F.array_except("isr", "previous_isr")))
            .filter((F.col("removed") > 0) | (F.col("added") > 0))
            .select("topic_id", "partition", "timestamp", "timestamp_ms", "offset", "previous_isr", "isr",
                    "removed", "added"))


def isr_churn(ev: DataFrame, top_n: int = 10) -> tuple[DataFrame, DataFrame]:
    """(hourly, top): ISR shrinks and expands per partition per hour, and the ``top_n`` partitions
    by shrinks + expands over the whole log (ties: topic name, partition). A change that both drops
    and adds members counts as one shrink and one expand."""
    ch = isr_changes(ev).join(topic_names(ev), "topic_id", "left")
    shrink = F.sum((F.col("removed") > 0).cast("int"))
    expand = F.sum((F.col("added") > 0).cast("int"))
    hourly = (ch.withColumn("hour", F.date_trunc("hour", "timestamp"))
              .groupBy("topic_name", "topic_id", "partition", "hour")
              .agg(shrink.alias("shrinks"), expand.alias("expands"),
                   F.sum("removed").alias("replicas_removed"), F.sum("added").alias("replicas_added"))
              .withColumn("hour_ms", F.unix_millis("hour"))
              .orderBy("hour", "topic_name", "partition"))
    totals = (ch.groupBy("topic_name", "topic_id", "partition")
              .agg(shrink.alias("shrinks"), expand.alias("expands"))
              .withColumn("changes", F.col("shrinks") + F.col("expands")))
    rank = F.row_number().over(Window.orderBy(F.col("changes").desc(), F.col("topic_name"), F.col("partition")))
    top = totals.withColumn("rank", rank).filter(F.col("rank") <= top_n).orderBy("rank")
    return hourly, top


def topics(ev: DataFrame) -> DataFrame:
    """Each topic's creation (or appearance in the baseline snapshot), deletion, and partition count."""
    created = (ev.filter(F.col("record_type") == "TopicRecord")
               .select("topic_id", "topic_name", F.col("timestamp_ms").alias("created_ms"),
                       F.when(~F.col("from_snapshot"), F.col("offset")).alias("created_offset"),
                       F.col("from_snapshot").alias("in_snapshot")))
    deleted = (ev.filter(F.col("record_type") == "RemoveTopicRecord")
               .groupBy("topic_id").agg(F.min("timestamp_ms").alias("deleted_ms"),
                                        F.min("offset").alias("deleted_offset")))
    parts = (ev.filter(F.col("record_type") == "PartitionRecord")
             .groupBy("topic_id").agg(F.countDistinct("partition").alias("partitions")))
    return (created.join(deleted, "topic_id", "full").join(parts, "topic_id", "left")
            .withColumn("lifetime_ms", F.col("deleted_ms") - F.col("created_ms"))
            .withColumn("created", _ms_to_ts("created_ms")).withColumn("deleted", _ms_to_ts("deleted_ms"))
            .select("topic_name", "topic_id", "created", "deleted", "created_ms", "deleted_ms", "lifetime_ms",
                    "created_offset", "deleted_offset", "partitions", "in_snapshot")
            .orderBy(F.coalesce("created_offset", F.lit(-1)), "created_ms", "topic_name"))
