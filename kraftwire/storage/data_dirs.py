"""Opening a node's data directories at startup: lock each, then check who they belong to."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from kraftwire.storage import StorageError
from kraftwire.storage.lock import DirectoryLock, lock_all
from kraftwire.storage.meta_properties import MetaProperties, load_checked, read_meta

log = logging.getLogger(__name__)


def open_data_dirs(cfg: Any) -> tuple[MetaProperties, list[DirectoryLock]]:
    """Lock every log directory of ``cfg`` (Kafka's ``.lock``) and return the metadata directory's
    meta.properties, refusing an unformatted metadata directory, another node's or cluster's directory,
    directories of different clusters, or a ``cluster.id`` in the configuration that differs."""
    dirs: list[Path] = cfg.log_dirs
    locks = lock_all(dirs)
    try:
        expected = cfg["cluster.id"] or None
        meta = load_checked(dirs[0], cfg.node_id, expected, source="cluster.id in the configuration")
        for d in dirs[1:]:
            other = read_meta(d)
            if other is None:
                log.warning("log directory %s is not formatted (format it with `kraftwire storage format`)", d)
                continue
            load_checked(d, cfg.node_id, meta.cluster_id, source=f"{dirs[0]}/meta.properties")
    except StorageError:
        for lock in locks:
            lock.release()
        raise
    log.info("locked %d log director%s for cluster %s", len(dirs), "y" if len(dirs) == 1 else "ies",
             meta.cluster_id)
    return meta, locks
