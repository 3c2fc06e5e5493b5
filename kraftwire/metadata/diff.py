"""What changed between two views of the metadata image (the metadata-shell tree: nested dicts of strings).

A subtree present on one side only is one change (a topic created, an ACL removed); a file whose
text differs is one change (a partition's leader, a config value). Sections not about the cluster's
state (where the image came from, the topic-id index, the producer-id counter) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SECTIONS = ("features", "cluster", "topics", "configs", "acls", "clientQuotas", "scram")
ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: ``path`` (``/topics/orders/0/leader``), its kind, and the two sides
    (a string, a subtree, or None where absent)."""

    path: str
    kind: str
    before: Any
    after: Any

    @property
    def section(self) -> str:
        return self.path.split("/")[1]

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "path": self.path, "change": self.kind,
                "before": self.before, "after": self.after}


def _sort_key(name: str) -> tuple[int, int, str]:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def diff_trees(before: dict[str, Any], after: dict[str, Any], sections: tuple[str, ...] = SECTIONS) -> list[Change]:
    """Changes from ``before`` to ``after`` in ``sections``, in tree order."""
    out: list[Change] = []
    for name in sections:
        _diff(f"/{name}", before.get(name, {}), after.get(name, {}), out)
    return out


def _diff(path: str, a: Any, b: Any, out: list[Change]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for name in sorted(a.keys() | b.keys(), key=_sort_key):
            child = f"{path}/{name}"
            if name not in b:
                out.append(Change(child, REMOVED, a[name], None))
            elif name not in a:
                out.append(Change(child, ADDED, None, b[name]))
            else:
                _diff(child, a[name], b[name], out)
    elif a != b:
        out.append(Change(path, CHANGED, a, b))


def summary(changes: list[Change]) -> dict[str, dict[str, int]]:
    """Per section: how many entries were added, removed, changed."""
    out: dict[str, dict[str, int]] = {}
    for c in changes:
        counts = out.setdefault(c.section, {ADDED: 0, REMOVED: 0, CHANGED: 0})
        counts[c.kind] += 1
    return out
