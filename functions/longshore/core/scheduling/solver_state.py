"""The scheduler's working state: pod classes, units, node states and placed pods, and the memos."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.pods import LabelSelector, PlacementKey, Pod, PodAffinityTerm, TopologySpread
from longshore.core.quantity import format_quantity
from longshore.core.requirements import RequirementError, Requirements
from longshore.core.reservations import without_refused
from longshore.core.resources import Resources
from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput
from longshore.core.scheduling.node_bases import NodeBase, node_base
from longshore.core.scheduling.node_bases import Placed as Placed
from longshore.core.scheduling.plan import ClaimPlan, OfferingOption
from longshore.core.scheduling.podreqs import Variant, node_requirement_terms
from longshore.core.scheduling.templates import POD_SLOT, build_templates
from longshore.core.taints import tolerates

HOSTNAME = wk.HOSTNAME
PACK_DIMS = ("cpu", "memory", "pods")


@dataclass(slots=True)
class PodClass:
    """Identical pending pods (one placement signature), oldest first, and the variant they get."""

    pods: list[Pod]
    example: Pod
    requests: Resources
    labels: dict[str, str]
    variant: Variant | None = None
    reason: str | None = None


@dataclass(slots=True)
class Unit:
    """Pods of one class pinned to the same domains; `pods` shrinks as they are placed."""

    cls: PodClass
    requirements: Requirements
    pods: list[Pod]
    reasons: list[str] = field(default_factory=list)
    pinned: tuple[str, ...] = ()  # keys `_pin` pinned it on (its pods are recorded in `placed` for them)

    @property
    def variant(self) -> Variant:
        assert self.cls.variant is not None
        return self.cls.variant


@dataclass(slots=True)
class NodeState:
    node: ExistingNode
    labels: dict[str, str]
    free: dict[str, int]
    pods: list[Pod]
    taints: tuple[Taint, ...]
    placed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Possible:
    """Pending pods after phase 2, with every value they may still get of each key some required
    anti-affinity in the batch uses (other than the hostname). Anti-affinity must hold whichever value the
    packer picks, so it counts all of them, as Karpenter's `Topology.Record` records every domain a pod could
    land in for anti-affinity groups."""

    labels: dict[str, str]
    namespace: str
    values: dict[str, frozenset[str]]  # topology key -> values the pods may get
    anti_affinity: tuple[PodAffinityTerm, ...]  # their own terms on those keys


def selects(term_selector_owner: Pod, term: PodAffinityTerm, labels: dict[str, str], namespace: str) -> bool:
    return term.covers_namespace(term_selector_owner.namespace, namespace) and term.selector.matches(labels)


def spread_matches(owner: Pod, spread: TopologySpread, labels: dict[str, str], namespace: str) -> bool:
    return namespace == owner.namespace and spread.selector.matches(labels)


def anchor(selector: LabelSelector) -> tuple[str, str] | None:
    """A label every pod `selector` matches must carry (a `matchLabels` pair, or `In` with one value), so a
    count need only look at the placed pods with it; None when the selector has no such label."""
    if selector.match_labels:
        return selector.match_labels[0]
    for expr in selector.match_expressions:
        if expr.operator == "In" and len(expr.values) == 1:
            return expr.key, expr.values[0]
    return None


def friendly(resource: str, amount: int) -> str:
    text = format_quantity(resource, amount)
    return (
        f"{text} of {resource}"
        if resource not in ("cpu", "pods")
        else (f"{text} cpu" if resource == "cpu" else f"{text} pod slots")
    )


def daemon_matches(daemon: Pod, labels: dict[str, str]) -> bool:
    try:
        return any(term.matches(labels) for term in node_requirement_terms(daemon))
    except RequirementError:
        return False


def _count(
    counts: dict[str, int],
    placed: list[Placed],
    positions: Iterable[int],
    key: str,
    matches: Callable[[Placed], bool],
) -> None:
    for position in positions:
        record = placed[position]
        value = record.domains.get(key)
        if value is not None and matches(record):
            counts[value] = counts.get(value, 0) + record.count


class SolverState:
    """Everything one `solve` call works on: the pools' templates, the node states, the pods placed so far
    (`placed` only ever grows: `tally` and the anti-affinity indexes rely on it), the plan being built and
    the memos. One per call, never shared between calls."""

    def __init__(self, inp: SchedulingInput, anti_choice: int = 0) -> None:
        self.inp = inp
        # which combination of free domains self-selecting anti-affine units take (`solver_domains._choose`),
        # and how many the batch offers (1: no choice); `solve` runs a few as a portfolio
        self.anti_choice = anti_choice
        self.anti_choices = 1
        catalog = inp.catalog.without_offerings(inp.unavailable) if inp.unavailable else inp.catalog
        self.reservations = without_refused(inp.reservations, inp.unavailable)
        self.templates = build_templates(
            inp.pools,
            inp.node_classes,
            catalog,
            inp.daemonsets,
            inp.settings,
            self.reservations,
            inp.placement_groups,
        )
        self.prefer_no_schedule = any(t.effect == "PreferNoSchedule" for p in inp.pools for t in p.taints)
        bases = [self.base(n) for n in self.ordered(inp.nodes)]
        in_flight_bases = [self.base(n) for n in self.ordered(inp.in_flight)]
        self.nodes = [self.node_state(node, base) for node, base in bases]
        self.in_flight = [self.node_state(node, base) for node, base in in_flight_bases]
        self.placed: list[Placed] = []
        # label key -> value -> positions in `placed` (increasing), built for a key at its first anchored tally:
        # past the existing nodes' records (`by_label`), and theirs when no warm container keeps them
        self.by_label: dict[str, dict[str, list[int]]] = {}
        self._existing_by_label: dict[str, dict[str, list[int]]] = {}
        # indexes over `placed` for the anti-affinity checks that would otherwise scan every placed pod
        self.host_anti: dict[str, list[Placed]] = {}  # hostname -> placed pods with hostname anti-affinity
        self.domain_anti: list[tuple[int, Placed]] = []  # (position, placed) with other anti-affinity
        # non-hostname keys of the batch's anti-affinity terms, and the pending pods' possible values of them
        self.anti_keys = sorted(
            {
                term.topology_key
                for pod in inp.pods
                for term in (*pod.pod_anti_affinity, *pod.preferred_pod_anti_affinity)
                if term.topology_key != HOSTNAME
            }
        )
        self.possible: list[Possible] = []
        # required pod affinity of the batch on keys other than the hostname, (owner's namespace, term): pods
        # it selects are pinned to one domain so their followers can follow (see `split_units`)
        self.batch_affinity = list(
            dict.fromkeys(
                (pod.namespace, term)
                for pod in inp.pods
                for term in pod.pod_affinity
                if term.topology_key != HOSTNAME
            )
        )
        self.relaxed: list[PodClass] = []  # classes split off by a relaxation in phase 2 (`split_units`)
        self._node_bases = [base for _, base in bases]  # their records lead `placed` (`_with_label`)
        self._node_records = sum(len(base.records) for base in self._node_bases)
        for _, base in (*bases, *in_flight_bases):  # running pods (`by_label` is empty yet: no `record`)
            start = len(self.placed)
            self.placed.extend(base.records)
            for index in base.anti:
                self._index_anti(start + index, base.records[index])
        self.unschedulable: list[tuple[str, str]] = []
        self.claims: list[ClaimPlan] = []
        self.claim_counter: dict[str, int] = {}
        self.dims: list[str] = list(PACK_DIMS)
        self.offers_of: list[list[int]] = []
        self.cluster_cost_left: int | None = None  # µ$/h the cluster's dollar limit leaves (`cost_limits`)
        self.offer_order: list[int] = []
        self.type_order_cache: dict[int, tuple[list[int], dict[int, list[int]]]] = {}
        self.fallback_cache: dict[tuple[int, tuple[int, ...], int], tuple[OfferingOption, ...]] = {}
        self.serving_cache: dict[tuple[str, Requirements], list[int]] = {}
        self.compatible_cache: dict[tuple[str, Requirements], list[bool]] = {}
        self.offering_options: dict[int, OfferingOption] = {}  # per offer index of the pool being packed
        self.zones_cache: dict[tuple[str, Requirements, str], list[tuple[Resources, frozenset[str]]]] = {}
        self.universe_cache: dict[tuple[object, ...], list[str]] = {}
        self.before_class = 0
        self.fitting_cache: dict[tuple[object, ...], bool] = {}
        self.tallies: dict[tuple[object, ...], tuple[int, dict[str, int]]] = {}
        self.refusals: dict[tuple[object, ...], str | None] = {}
        self.claim_requirements: dict[tuple[object, ...], Requirements] = {}

    def record(self, placed: Placed) -> None:
        """Remember a placement for topology counting, and index its anti-affinity terms by kind."""
        if placed.anti_affinity:
            self._index_anti(len(self.placed), placed)
        for key, positions in self.by_label.items():
            value = placed.labels.get(key)
            if value is not None:
                positions.setdefault(value, []).append(len(self.placed))
        self.placed.append(placed)

    def _index_anti(self, position: int, placed: Placed) -> None:
        if any(term.topology_key == HOSTNAME for term in placed.anti_affinity):
            host = placed.domains.get(HOSTNAME)
            if host is not None:
                self.host_anti.setdefault(host, []).append(placed)
        if any(term.topology_key != HOSTNAME for term in placed.anti_affinity):
            self.domain_anti.append((position, placed))

    @staticmethod
    def ordered(nodes: Iterable[ExistingNode]) -> list[ExistingNode]:
        return sorted((n for n in nodes if not n.deleting), key=lambda n: (not n.initialized, n.name))

    def base(self, node: ExistingNode) -> tuple[ExistingNode, NodeBase]:
        """The node and its base (`node_bases`; kept by `inp.bases` across the passes of a warm container)."""
        bases = self.inp.bases
        return node, (bases.base(node) if bases is not None else node_base(node))

    def node_state(self, node: ExistingNode, base: NodeBase) -> NodeState:
        """The node's working state: its base with copies of what placing changes; an in-flight node also
        loses the room of the DaemonSets that will land there."""
        free = dict(base.free)
        if node.in_flight and not any(p.is_daemonset for p in base.pods):
            labels = dict(node.labels)
            for daemon in self.inp.daemonsets:
                if tolerates(
                    daemon.tolerations, node.taints, ignore_prefer_no_schedule=True
                ) and daemon_matches(daemon, labels):
                    for name, amount in (daemon.requests + POD_SLOT).items:
                        if name in free:
                            free[name] -= amount
        return NodeState(node, base.labels, free, list(base.pods), base.taints)

    def pod_classes(self) -> list[PodClass]:
        groups: dict[PlacementKey, list[Pod]] = {}  # by key: a tuple is cheaper per pod than a signature
        for pod in self.inp.pods:
            if not pod.is_provisionable():
                continue
            groups.setdefault(pod.placement_key(), []).append(pod)
        classes = []
        for pods in groups.values():
            sig = pods[0].placement_signature()
            classes.append(
                PodClass(
                    sorted(pods, key=lambda p: (p.created_at, p.name)),
                    sig,
                    sig.requests + POD_SLOT,
                    sig.label_map(),
                )
            )
        # Karpenter's queue order: cpu, then memory, descending
        classes.sort(key=lambda c: (-c.requests.get("cpu"), -c.requests.get("memory"), c.pods[0].key))
        return classes

    def domains_with(self, owner: Pod, term: PodAffinityTerm) -> dict[str, int]:
        return self.tally(
            ("term", owner.namespace, term),
            term.topology_key,
            lambda placed: selects(owner, term, placed.labels, placed.namespace),
            anchor(term.selector),
        )

    def tally(
        self,
        selector: tuple[object, ...],
        key: str,
        matches: Callable[[Placed], bool],
        label: tuple[str, str] | None = None,
    ) -> dict[str, int]:
        """Per value of `key`, the placed pods a selector matches. `placed` only grows, so each selector's
        counts are kept and brought up to date with the pods placed since (classes share a few selectors;
        rescanning every placed pod per class grows with classes squared). With `label` (`anchor`: a label
        every matching pod carries) only the placed pods with it are looked at, through `by_label`: a batch
        of many workloads in a big cluster does not scan every running pod per workload. The running pods'
        part comes from `inp.bases` when a warm container keeps it (`NodeBases.kept_tally`)."""
        entry = self.tallies.get(selector)
        if entry is None:
            entry = (self._node_records, self._existing_tally(selector, key, matches, label))
        seen, counts = entry
        placed_list = self.placed
        if label is None:
            positions: Iterable[int] = range(seen, len(placed_list))
        else:
            with_label = self._with_label(*label)
            positions = with_label[bisect_left(with_label, seen) :]
        _count(counts, placed_list, positions, key, matches)
        self.tallies[selector] = (len(placed_list), counts)
        return dict(counts)

    def _existing_tally(
        self,
        selector: tuple[object, ...],
        key: str,
        matches: Callable[[Placed], bool],
        label: tuple[str, str] | None,
    ) -> dict[str, int]:
        """`tally` over the existing nodes' records (the first `_node_records` of `placed`)."""
        bases, whole = self.inp.bases, (*selector, key)
        if bases is not None:
            kept = bases.kept_tally(self._node_bases, whole)
            if kept is not None:
                return kept
        counts: dict[str, int] = {}
        positions: Iterable[int] = (
            range(self._node_records) if label is None else self._existing_positions(*label)
        )
        _count(counts, self.placed, positions, key, matches)
        if bases is not None:
            bases.keep_tally(self._node_bases, whole, key, matches, label, counts)
        return counts

    def _existing_positions(self, key: str, value: str) -> Sequence[int]:
        """Positions in `placed` of the existing nodes' records labelled `key=value`."""
        if self.inp.bases is not None:  # kept by the warm container while no node changed
            return self.inp.bases.label_positions(self._node_bases, key).get(value, ())
        index = self._existing_by_label.get(key)
        if index is None:
            index = self._existing_by_label[key] = {}
            for position in range(self._node_records):
                found = self.placed[position].labels.get(key)
                if found is not None:
                    index.setdefault(found, []).append(position)
        return index.get(value, [])

    def _with_label(self, key: str, value: str) -> list[int]:
        """Positions in `placed` past the existing nodes' records (in-flight nodes' pods and the pods placed
        by this solve) labelled `key=value` (the key's index built on first use, kept by `record`)."""
        index = self.by_label.get(key)
        if index is None:
            index = self.by_label[key] = {}
            for position in range(self._node_records, len(self.placed)):
                found = self.placed[position].labels.get(key)
                if found is not None:
                    index.setdefault(found, []).append(position)
        return index.get(value, [])

    def fail(self, unit: Unit, reason: str) -> None:
        for pod in unit.pods:
            self.unschedulable.append((pod.key, reason))
        unit.pods = []


def self_selects(cls: PodClass, term: PodAffinityTerm) -> bool:
    return selects(cls.example, term, cls.labels, cls.example.namespace)
