"""Kafka wire protocol: framing, generated message codecs, record batches, error codes."""
