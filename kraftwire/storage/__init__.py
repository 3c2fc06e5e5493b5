"""On-disk state laid out like Kafka's: segments, epoch cache, quorum-state, snapshots, meta.properties."""


class StorageError(Exception):
    """The node's storage is missing, unformatted, inconsistent or belongs to another node/cluster."""
