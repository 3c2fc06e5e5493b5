"""aiokafka: AIOKafkaConsumer by assign() and by subscribe(); AIOKafkaAdminClient describes the cluster."""

from __future__ import annotations

import asyncio

import aiokafka
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import OffsetAndMetadata

from compat.drivers.common import TOPIC, emit, emit_record, fail, parse

TP = TopicPartition(TOPIC, 0)


async def consume(args, group: str | None) -> None:
    consumer = AIOKafkaConsumer(bootstrap_servers=args.bootstrap, group_id=group, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    try:
        if group is None:
            consumer.assign([TP])
            await consumer.seek_to_beginning(TP)
        else:
            consumer.subscribe([TOPIC])
        got, last = 0, -1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + args.timeout
        while got < args.count and loop.time() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for msg in records:
                    if got < args.count:
                        emit_record(msg.offset, msg.value)
                        last = msg.offset
                        got += 1
        if got < args.count:
            fail(f"read {got} of {args.count} records in {args.timeout}s")
        if group is not None:
            await consumer.commit({TP: OffsetAndMetadata(last + 1, "")})
    finally:
        await consumer.stop()


async def describe(args) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap)
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
        emit("describe", {"cluster_id": cluster["cluster_id"], "controller_id": cluster["controller_id"],
                          "nodes": sorted(b["node_id"] for b in cluster["brokers"])})
    finally:
        await admin.close()


def main() -> None:
    args = parse()
    if args.mode == "version":
        emit("version", aiokafka.__version__)
    elif args.mode == "describe":
        asyncio.run(describe(args))
    else:
        asyncio.run(consume(args, args.group if args.mode == "group" else None))


if __name__ == "__main__":
    main()
