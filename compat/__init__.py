"""The kraftwire compatibility matrix: real Kafka clients and tools against a real kraftwire quorum.

``python -m compat`` starts a 3-voter quorum of ``kraftwire server`` processes on free loopback ports and
checks, for kafka-python, aiokafka, confluent-kafka, kcat, the Java client and kafkajs, that each (a) reads
``__cluster_metadata``-0 from earliest by manual assignment, (b) does so in a consumer group and resumes
from the committed offset after a restart, (c) describes the cluster/quorum, then Apache Kafka's own
dump-log and metadata-quorum tools where available. It prints a client × check table and exits non-zero
on any failure.
"""
