"""Sans-I/O KIP-595 Raft: a pure state machine driven by (time, message) events."""
