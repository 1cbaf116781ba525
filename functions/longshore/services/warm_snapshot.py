"""The provisioner's snapshot of pods and nodes, kept for the passes of a warm container and brought up to
date from what changed since the last pass.

Theory of operation: `snapshot.pending_pods`, `bound_pods` and `existing_nodes` look at every pod and node of
the cluster each pass (150,000 pods: about a quarter of a pass), and the solver then derives every node's free
room and topology records from them (`core.scheduling.node_bases`: another quarter). Almost nothing changes
between two passes: the watch cache (`adapters.kube.informer`) hands back the very same dict for an object that
did not change, and a new dict for one that did. `WarmSnapshot.update` compares the lists it is given with the
previous ones by object identity (two set differences of ids, no look into the objects), parses and files only
the pods that came or went, rebuilds only the `ExistingNode`s whose node object or bound pods changed, and hands
the solver the same `ExistingNode` object for every other node, so `NodeBases` (passed in `SchedulingInput`)
keeps their free room and records too. A relist (410 Gone) hands back new dicts: every pod and node is new,
and the snapshot is rebuilt from them, as a cold pass would.

Rules:
- What `update` returns equals what the three `snapshot` functions return for the same lists (same values,
  same order): `tests/provisioning/test_warm_snapshot.py` applies random changes and compares with a rebuild.
- The previous lists' objects are kept alive until the next update, so an id never stands for another object.
  A list holding the same object twice, or another `ClusterConfig`, is answered by a rebuild; an update that
  raises half way (a malformed object the rebuild would also raise on) leaves the snapshot empty.
- Listed objects are read-only (the watch cache's rule): an object changed in place would not be seen.
- Not state: a cold container starts empty, and an empty or reset snapshot is only a rebuild.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longshore.core.model import ClusterConfig
from longshore.core.pods import Pod
from longshore.core.scheduling import ExistingNode
from longshore.core.scheduling.node_bases import NodeBases
from longshore.services import snapshot
from longshore.services.snapshot import PodCache, Skipped

Manifest = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """`pending_pods`, `bound_pods` (its skipped part) and `existing_nodes` of one pass's lists."""

    pending: tuple[Pod, ...]
    skipped_pending: tuple[Skipped, ...]
    skipped_bound: tuple[Skipped, ...]
    existing: tuple[ExistingNode, ...]
    skipped_nodes: tuple[Skipped, ...]


def _bound(manifest: Manifest) -> bool:
    return bool((manifest.get("spec") or {}).get("nodeName"))  # `snapshot.bound_pods`'s test


class WarmSnapshot:
    """The last pass's snapshot, updated from what changed (see the module docstring)."""

    def __init__(self) -> None:
        self.bases = NodeBases()
        self._lock = threading.Lock()
        self._reset(None)

    def _reset(self, config: ClusterConfig | None) -> None:
        self._config = config
        self._pods: dict[int, Manifest] = {}  # id -> pod object of the last list
        self._parsed: dict[int, Pod | Skipped] = {}  # id -> the bound pod parsed
        self._unbound: set[int] = set()
        self._skipped: set[int] = set()  # bound pods that could not be read
        self._on_node: dict[str, dict[int, Pod]] = {}  # node name -> id -> live bound pod
        self._nodes: dict[int, tuple[Manifest, str, tuple[ExistingNode | Skipped, ...]]] = {}
        self.rebuilt_nodes = 0  # nodes built again by the last update (a measure of its cost)

    def update(
        self, nodes: Sequence[Manifest], pods: Sequence[Manifest], config: ClusterConfig, cache: PodCache
    ) -> Snapshot:
        """The snapshot of `nodes` and `pods` (pods parsed through `cache`, which forgets the pods that left
        the list: `PodCache.retain` at the cost of what changed)."""
        with self._lock:
            positions = dict(zip(map(id, pods), range(len(pods)), strict=True))  # id -> index, no Python loop
            if (config is not self._config and config != self._config) or len(positions) != len(pods):
                self._reset(config)
                if len(positions) != len(pods):  # the same object twice: nothing to keep, a plain rebuild
                    cache.retain(pods)
                    return self._fresh(nodes, pods, config, cache)
            try:
                dirty = self._apply_pods(pods, positions, cache)
                existing, skipped_nodes = self._existing(nodes, dirty, positions, config)
            except BaseException:  # half applied: the next update rebuilds, then raises as a rebuild would
                self._reset(None)
                raise
            self.bases.retain(existing)
            unbound = [pods[positions[i]] for i in sorted(self._unbound, key=positions.__getitem__)]
            pending, skipped_pending = snapshot.pending_pods(unbound, cache)
            skipped_bound = [self._parsed[i] for i in sorted(self._skipped, key=positions.__getitem__)]
            return Snapshot(
                pending,
                skipped_pending,
                tuple(s for s in skipped_bound if isinstance(s, Skipped)),
                existing,
                skipped_nodes,
            )

    def _apply_pods(self, pods: Sequence[Manifest], positions: dict[int, int], cache: PodCache) -> set[str]:
        """File the pods that came and went since the last list; the names of the nodes whose pods changed."""
        dirty: set[str] = set()
        gone = self._pods.keys() - positions.keys()
        came = positions.keys() - self._pods.keys()
        cache.forget([self._pods[i] for i in gone])
        for i in gone:
            del self._pods[i]
            if i in self._unbound:
                self._unbound.discard(i)
                continue
            parsed = self._parsed.pop(i)
            self._skipped.discard(i)
            if isinstance(parsed, Pod) and parsed.node_name in self._on_node:
                on_node = self._on_node[parsed.node_name]
                if on_node.pop(i, None) is not None:
                    dirty.add(parsed.node_name)
                if not on_node:
                    del self._on_node[parsed.node_name]
        for i in came:
            manifest = pods[positions[i]]
            self._pods[i] = manifest
            if not _bound(manifest):
                self._unbound.add(i)
                continue
            parsed = self._parsed[i] = cache.parse(manifest)
            if isinstance(parsed, Skipped):
                self._skipped.add(i)
            elif parsed.node_name and not parsed.is_terminal:  # `existing_nodes`'s test
                self._on_node.setdefault(parsed.node_name, {})[i] = parsed
                dirty.add(parsed.node_name)
        return dirty

    def _existing(
        self, nodes: Sequence[Manifest], dirty: set[str], positions: dict[int, int], config: ClusterConfig
    ) -> tuple[tuple[ExistingNode, ...], tuple[Skipped, ...]]:
        kept = self._nodes
        entries: dict[int, tuple[Manifest, str, tuple[ExistingNode | Skipped, ...]]] = {}
        existing: list[ExistingNode] = []
        skipped: list[Skipped] = []
        rebuilt = 0
        for node in nodes:
            entry = kept.get(id(node))
            if entry is None or entry[1] in dirty:
                name = snapshot.object_name(node)
                on_node = self._on_node.get(name, {})
                bound = [on_node[i] for i in sorted(on_node, key=positions.__getitem__)]
                found, left_out = snapshot.existing_nodes([node], bound, config)
                entry = (node, name, (*found, *left_out))
                rebuilt += 1
            entries[id(node)] = entry
            for item in entry[2]:
                if isinstance(item, Skipped):
                    skipped.append(item)
                else:
                    existing.append(item)
        self._nodes = entries
        self.rebuilt_nodes = rebuilt
        return tuple(existing), tuple(skipped)

    def _fresh(
        self, nodes: Sequence[Manifest], pods: Sequence[Manifest], config: ClusterConfig, cache: PodCache
    ) -> Snapshot:
        pending, skipped_pending = snapshot.pending_pods(pods, cache)
        bound, skipped_bound = snapshot.bound_pods(pods, cache)
        existing, skipped_nodes = snapshot.existing_nodes(nodes, bound, config)
        return Snapshot(pending, skipped_pending, skipped_bound, existing, skipped_nodes)


_SHARED = WarmSnapshot()


def shared() -> WarmSnapshot:
    """The container's snapshot (the provisioner's passes; one at a time, under its lock)."""
    return _SHARED
