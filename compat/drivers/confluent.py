"""confluent-kafka (librdkafka): Consumer by assign() and by subscribe(); AdminClient.describe_cluster."""

from __future__ import annotations

import time

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from compat.drivers.common import TOPIC, emit, emit_record, fail, parse


def consume(args, group: str | None) -> None:
    # librdkafka needs a group.id even for assign(); with assign() nothing is committed under it.
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": group or "compat-assign-unused",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    try:
        if group is None:
            consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        else:
            consumer.subscribe([TOPIC])
        got, last = 0, -1
        deadline = time.monotonic() + args.timeout
        while got < args.count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                fail(f"consume error: {msg.error()}")
            emit_record(msg.offset(), msg.value())
            last = msg.offset()
            got += 1
        if got < args.count:
            fail(f"read {got} of {args.count} records in {args.timeout}s")
        if group is not None:
            consumer.commit(offsets=[TopicPartition(TOPIC, 0, last + 1)], asynchronous=False)
    finally:
        consumer.close()


def describe(args) -> None:
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    desc = admin.describe_cluster(request_timeout=15).result(timeout=20)
    emit("describe", {"cluster_id": desc.cluster_id, "controller_id": desc.controller.id if desc.controller else -1,
                      "nodes": sorted(n.id for n in desc.nodes)})


def main() -> None:
    args = parse()
    if args.mode == "version":
        ver = confluent_kafka.version()  # a plain string in 2.x, a (string, int) tuple in older releases
        ver = ver[0] if isinstance(ver, tuple) else ver
        emit("version", f"{ver} (librdkafka {confluent_kafka.libversion()[0]})")
    elif args.mode == "describe":
        describe(args)
    else:
        consume(args, args.group if args.mode == "group" else None)


if __name__ == "__main__":
    main()
