"""``meta.properties``: which node and cluster a log directory belongs to (Kafka's v1 format)."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from pathlib import Path

from kraftwire.config import parse_properties
from kraftwire.storage import StorageError
from kraftwire.storage.fsutil import atomic_write

FILE = "meta.properties"


def random_uuid() -> str:
    """A Kafka-style id: 16 random bytes, URL-safe base64 without padding (22 characters).

    Like Kafka's Uuid.randomUuid, ids starting with '-' are avoided (they read as CLI flags).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def valid_cluster_id(text: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(text + "==")) == 16 and len(text) == 22
    except (ValueError, TypeError):
        return False


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str
    version: int = 1

    def render(self) -> str:
        return (f"#\n#{'kraftwire'}\nversion={self.version}\ncluster.id={self.cluster_id}\n"
                f"node.id={self.node_id}\ndirectory.id={self.directory_id}\n")


def read_meta(log_dir: Path) -> MetaProperties | None:
    path = Path(log_dir) / FILE
    if not path.exists():
        return None
    props = parse_properties(path.read_text())
    try:
        return MetaProperties(props["cluster.id"], int(props["node.id"]), props.get("directory.id", ""),
                              int(props.get("version", "1")))
    except (KeyError, ValueError) as e:
        raise StorageError(f"{path}: malformed meta.properties ({e})") from None


def write_meta(log_dir: Path, meta: MetaProperties) -> None:
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    atomic_write(Path(log_dir) / FILE, meta.render().encode())


def load_checked(log_dir: Path, node_id: int, cluster_id: str | None = None, *,
                 source: str = "the quorum") -> MetaProperties:
    """The directory's meta.properties, refusing a missing file or a node/cluster id mismatch
    (``source`` names where the expected cluster id comes from)."""
    meta = read_meta(log_dir)
    if meta is None:
        raise StorageError(f"{log_dir} is not formatted: "
                           "run `kraftwire storage format -c CONFIG -t CLUSTER_ID`")
    if meta.node_id != node_id:
        raise StorageError(f"{log_dir}/meta.properties has node.id={meta.node_id} but the configuration "
                           f"says node.id={node_id}; refusing to start")
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise StorageError(f"{log_dir}/meta.properties has cluster.id={meta.cluster_id} but {source} says "
                           f"{cluster_id}; refusing to start (point log.dirs at this cluster's data or fix "
                           "cluster.id)")
    return meta
