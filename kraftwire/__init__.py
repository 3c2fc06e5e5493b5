"""kraftwire: Kafka's KRaft metadata quorum and quorum controller, speaking the real Kafka protocol."""

__version__ = "0.1.0"
