"""kafka-python: KafkaConsumer by assign() and by subscribe(); KafkaAdminClient describes."""

from __future__ import annotations

import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from compat.drivers.common import TOPIC, emit, emit_record, fail, parse

TP = TopicPartition(TOPIC, 0)


def consume(args, group: str | None) -> None:
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap.split(","), group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        if group is None:
            consumer.assign([TP])
            consumer.seek_to_beginning(TP)
        else:
            consumer.subscribe([TOPIC])
        got = 0
        last = -1
        deadline = time.monotonic() + args.timeout
        while got < args.count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for msg in records:
                    if got < args.count:
                        emit_record(msg.offset, msg.value)
                        last = msg.offset
                        got += 1
        if got < args.count:
            fail(f"read {got} of {args.count} records in {args.timeout}s")
        if group is not None:
            consumer.commit({TP: OffsetAndMetadata(last + 1, "", -1)})
    finally:
        consumer.close()


def describe(args) -> None:
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap.split(","))
    try:
        cluster = admin.describe_cluster()
        quorum = admin.describe_metadata_quorum()
        part = quorum["topics"][0]["partitions"][0]
        emit("describe", {"cluster_id": cluster["cluster_id"], "controller_id": cluster["controller_id"],
                          "nodes": sorted(b["broker_id"] for b in cluster["brokers"]),
                          "leader_id": part["leader_id"], "leader_epoch": part["leader_epoch"],
                          "high_watermark": part["high_watermark"],
                          "voters": sorted(v["replica_id"] for v in part["current_voters"])})
    finally:
        admin.close()


def main() -> None:
    args = parse()
    if args.mode == "version":
        emit("version", kafka.__version__)
    elif args.mode == "describe":
        describe(args)
    else:
        consume(args, args.group if args.mode == "group" else None)


if __name__ == "__main__":
    main()
