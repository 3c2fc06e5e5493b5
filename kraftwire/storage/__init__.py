"""On-disk state laid out like Kafka's: segments, epoch cache, quorum-state, snapshots, meta.properties."""
