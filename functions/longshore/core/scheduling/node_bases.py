"""What the solver derives from one existing node, kept for the passes of a warm container.

Theory of operation: every solve starts by turning each existing node into its working state (labels with
the hostname, free room = allocatable minus the requests and pod slots of its pods, the taints that count for
scheduling) and by recording every running pod for topology counting (`solver_state.Placed`: the pod's labels
and namespace, the node's domains, its anti-affinity terms). In a cluster of 150,000 pods that is most of a
pass, and almost none of it changes between passes. `NodeBases` keeps it per `ExistingNode` object: the caller
(`services.warm_snapshot`) hands the solver the same `ExistingNode` for a node whose object and pods did not
change, and a new one for a node that did, so the view follows the watch's changes and costs what changed.

Rules:
- `base(node)` is a pure function of the node (`node_base`); the memo is by object identity, and each entry
  keeps its node alive, so an id is never another node's. A hit returns exactly what `node_base` would.
- A base is read-only: the solver copies `free` and `pods` into its own `NodeState` (they change as it
  places pods) and never changes a `Placed` record, a labels dict or a domains dict.
- In-flight nodes are never kept (their free room depends on the DaemonSets of the call).
- `retain(nodes)` forgets the nodes not among `nodes`; the memo is as large as the cluster's nodes.
- `label_positions(order, key)`: where the records of `order` (bases laid end to end, as the solver lays out
  its running pods) carry each value of `key`. Kept while the solver passes the same bases in the same order
  (compared by identity), so a pass in which no node and no bound pod changed finds the topology indexes of
  the last one; any change builds them again.
- `kept_tally` / `keep_tally`: a topology count over the records of `order` (a spread's or an affinity term's
  matching pods per domain), kept across passes and solves. A count is a sum over bases, so when the bases
  change it is brought up to date from the bases that left and came, not counted again: only the records of
  changed nodes are looked at, and of those only the ones carrying an anchored count's label. What is handed
  out equals a count over `order` from scratch (`tests/provisioning/test_warm_snapshot.py`); a key is the
  solver's selector, which decides `matches` (the owner's namespace and the term or spread), with the
  topology key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.pods import Pod, PodAffinityTerm
from longshore.core.scheduling.inputs import ExistingNode
from longshore.core.scheduling.templates import POD_SLOT
from longshore.core.taints import scheduling_taints


@dataclass(slots=True)
class Placed:
    """A pod (or many identical ones) the plan put somewhere, for topology counting. Never changed once made:
    the records of running pods are shared by the passes of a warm container (`NodeBase.records`)."""

    labels: dict[str, str]
    namespace: str
    domains: dict[str, str]  # topology key -> value (hostname included when known)
    count: int
    anti_affinity: tuple[PodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeBase:
    """An existing node as a solve starts from it (see the module docstring); read-only."""

    labels: dict[str, str]
    free: dict[str, int]
    pods: tuple[Pod, ...]
    taints: tuple[Taint, ...]
    records: tuple[Placed, ...]  # the live pods that count for topology, in `pods` order
    anti: tuple[int, ...]  # positions in `records` of those with anti-affinity terms


def node_base(node: ExistingNode) -> NodeBase:
    """The node's labels (hostname set), free room, live pods, scheduling taints and topology records."""
    used: dict[str, int] = {}
    pods = tuple(p for p in node.pods if not p.is_terminal)
    for pod in pods:  # each pod's requests and its slot, summed without a `Resources` per pod
        for name, amount in pod.requests.items:
            used[name] = used.get(name, 0) + amount
    for name, amount in POD_SLOT.items:
        if pods:
            used[name] = used.get(name, 0) + amount * len(pods)
    free = {name: amount - used.get(name, 0) for name, amount in node.allocatable.items}
    taints = scheduling_taints(
        node.taints, node.startup_taints, initialized=node.initialized and not node.in_flight
    )
    labels = dict(node.labels)
    labels.setdefault(wk.HOSTNAME, node.name)
    domains = {**labels, wk.HOSTNAME: node.name}
    records = tuple(
        Placed(pod.label_map(), pod.namespace, domains, 1, pod.pod_anti_affinity)
        for pod in pods
        if pod.counts_for_topology()
    )
    anti = tuple(index for index, placed in enumerate(records) if placed.anti_affinity)
    return NodeBase(labels, free, pods, taints, records, anti)


@dataclass(slots=True)
class _Tally:
    """A kept count (`NodeBases.keep_tally`): per value of `key`, the records `matches` takes."""

    key: str
    matches: Callable[[Placed], bool]
    label: tuple[str, str] | None  # a label every record `matches` takes carries (`solver_state.anchor`)
    counts: dict[str, int]

    def add(self, placed: Placed, sign: int) -> None:
        value = placed.domains.get(self.key)
        if value is not None and self.matches(placed):
            count = self.counts.get(value, 0) + sign * placed.count
            if count:
                self.counts[value] = count
            else:
                del self.counts[value]


_TALLIES_KEPT = 4096  # counts kept at most; past it they are all dropped and counted again when asked
_VALUES_KEPT = 1 << 20  # domain values over all kept counts (a topology key with a value per node), likewise


class NodeBases:
    """`node_base` memoised by `ExistingNode` identity for a warm container (see the module docstring)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[ExistingNode, NodeBase]] = {}
        self.built = 0  # bases computed (not found): what the last passes cost
        self._order: list[NodeBase] = []  # the bases the kept positions and counts are over
        self._order_list: list[NodeBase] | None = None  # the list last followed (a solve's own list)
        self._positions: dict[str, dict[str, tuple[int, ...]]] = {}
        self._tallies: dict[tuple[object, ...], _Tally] = {}
        self._anchored: dict[tuple[str, str], list[_Tally]] = {}
        self._open: list[_Tally] = []
        self._tally_ok = True  # no base twice in `_order`
        self._values = 0  # entries of the kept counts when they were kept
        self.recounted = 0  # bases whose records the kept counts were last brought up to date from

    def base(self, node: ExistingNode) -> NodeBase:
        if node.in_flight:
            return node_base(node)
        entry = self._by_id.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        found = node_base(node)
        self._by_id[id(node)] = (node, found)
        self.built += 1
        return found

    def label_positions(self, order: list[NodeBase], key: str) -> dict[str, tuple[int, ...]]:
        """Value of `key` -> positions of the records with it, over `order`'s records end to end."""
        self._follow(order)
        found = self._positions.get(key)
        if found is None:
            index: dict[str, list[int]] = {}
            position = 0
            for base in order:
                for placed in base.records:
                    value = placed.labels.get(key)
                    if value is not None:
                        index.setdefault(value, []).append(position)
                    position += 1
            found = self._positions[key] = {value: tuple(ps) for value, ps in index.items()}
        return found

    def kept_tally(self, order: list[NodeBase], selector: tuple[object, ...]) -> dict[str, int] | None:
        """The kept count for `selector` over `order`'s records (a copy), or None when none is kept."""
        self._follow(order)
        kept = self._tallies.get(selector)
        return None if kept is None or not self._tally_ok else dict(kept.counts)

    def keep_tally(
        self,
        order: list[NodeBase],
        selector: tuple[object, ...],
        key: str,
        matches: Callable[[Placed], bool],
        label: tuple[str, str] | None,
        counts: dict[str, int],
    ) -> None:
        """Keep `counts`, the count over `order`'s records of those `matches` takes, per value of `key`."""
        self._follow(order)
        if selector in self._tallies or not self._tally_ok:
            return
        if len(self._tallies) >= _TALLIES_KEPT or self._values + len(counts) > _VALUES_KEPT:
            self._drop_tallies()
        kept = self._tallies[selector] = _Tally(key, matches, label, {v: n for v, n in counts.items() if n})
        self._values += len(kept.counts)
        if label is None:
            self._open.append(kept)
        else:
            self._anchored.setdefault(label, []).append(kept)

    def _follow(self, order: list[NodeBase]) -> None:
        """Bring what is kept from `_order` to `order` (a solve asks with the same list throughout: it is
        compared once). Positions are built again after any change; the counts subtract the bases that left
        and add those that came, and are dropped when most of the cluster changed (a relist) or a base is
        listed twice."""
        if order is self._order_list:
            return
        old = self._order
        self._order_list, self._order, self.recounted = order, list(order), 0
        if len(old) == len(order) and all(a is b for a, b in zip(old, order, strict=True)):
            return
        self._positions = {}
        old_ids, new_ids = {id(b) for b in old}, {id(b) for b in order}
        self._tally_ok = len(new_ids) == len(order)  # a base twice: counts by base would not add up
        left = [b for b in old if id(b) not in new_ids]
        came = [b for b in order if id(b) not in old_ids]
        if not self._tally_ok or len(left) + len(came) > max(64, len(order) // 4):
            self._drop_tallies()
            return
        self.recounted = len(left) + len(came)
        if self._tallies:
            for bases, sign in ((left, -1), (came, 1)):
                for base in bases:
                    for placed in base.records:
                        self._count(placed, sign)

    def _count(self, placed: Placed, sign: int) -> None:
        for kept in self._open:
            kept.add(placed, sign)
        anchored = self._anchored
        for pair in placed.labels.items():
            for kept in anchored.get(pair, ()):
                kept.add(placed, sign)

    def _drop_tallies(self) -> None:
        self._tallies, self._anchored, self._open, self._values = {}, {}, [], 0

    def retain(self, nodes: Iterable[ExistingNode]) -> None:
        keep = {id(n) for n in nodes}
        for stale in [k for k in self._by_id if k not in keep]:
            del self._by_id[stale]

    def __len__(self) -> int:
        return len(self._by_id)
