"""Classic consumer groups: a sans-I/O group coordinator and its durable offsets store."""

from kraftwire.group.config import GroupConfig
from kraftwire.group.coordinator import GROUP_APIS, Completion, Done, GroupCoordinator, Pending, Result
from kraftwire.group.state import GroupState
from kraftwire.group.store import FileOffsetStore, MemoryOffsetStore, OffsetStore, store_dir

__all__ = [
    "GROUP_APIS", "Completion", "Done", "FileOffsetStore", "GroupConfig", "GroupCoordinator", "GroupState",
    "MemoryOffsetStore", "OffsetStore", "Pending", "Result", "store_dir",
]
