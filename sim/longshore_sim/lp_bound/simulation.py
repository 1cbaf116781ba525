"""The simulation's bounds: classes from the pods, bins from the config's pool templates (with DaemonSets and
kubelet settings), then the fluid LP and the configuration LP (`longshore_sim.lp_bound` has the recipe)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig, Taint
from longshore.core.pods import Pod
from longshore.core.requirements import RequirementError, Requirements
from longshore.core.scheduling.podreqs import node_requirement_terms
from longshore.core.scheduling.templates import build_templates
from longshore.core.taints import tolerates
from longshore_sim.lp_bound.colgen import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TIME_LIMIT,
    ENUMERATION_LIMIT,
    ConfigurationBound,
    _undominated,
    generate_columns,
)
from longshore_sim.lp_bound.colgen import Bin as _Bin

DIMENSIONS = ("cpu", "memory", "pods")
_SCALE = (1000.0, float(2**30), 1.0)


@dataclass(frozen=True, slots=True)
class LowerBound:
    cost_per_hour: float
    classes: int
    bins: int
    unplaceable: tuple[str, ...] = ()  # pod keys no bin can hold (left out of the bound)


@dataclass(frozen=True, slots=True)
class _Class:
    example: Pod
    count: int
    demand: tuple[int, int, int]
    one_per_node: bool


def _self_anti_affine(pod: Pod) -> bool:
    labels = pod.label_map()
    return any(
        t.topology_key == "kubernetes.io/hostname"
        and t.covers_namespace(pod.namespace, pod.namespace)
        and t.selector.matches(labels)
        for t in pod.pod_anti_affinity
    )


def _classes(pods: Iterable[Pod]) -> list[_Class]:
    """Pods that are interchangeable for the bounds. A self-anti-affine class ("one per node") holds only
    pods with the same namespace, labels and terms, so each one's term repels all the others; anti-affinity
    between different classes, pod affinity and topology spread are left out (a relaxation: still a bound)."""
    groups: dict[tuple[object, ...], list[Pod]] = defaultdict(list)
    for pod in pods:
        apart = _self_anti_affine(pod)
        key = (
            pod.requests,
            pod.node_selector,
            pod.required_node_terms,
            pod.tolerations,
            (pod.namespace, pod.labels, pod.pod_anti_affinity) if apart else None,
        )
        groups[key].append(pod)
    result = []
    for members in groups.values():
        example = members[0]
        demand = (example.requests.get("cpu"), example.requests.get("memory"), 1)
        result.append(_Class(example, len(members), demand, _self_anti_affine(example)))
    return result


def _serves(cls: _Class, template_taints: tuple[Taint, ...], requirements: Requirements) -> bool:
    if not tolerates(cls.example.tolerations, template_taints, ignore_prefer_no_schedule=True):
        return False
    try:
        terms = node_requirement_terms(cls.example)
    except RequirementError:
        return False
    return any(requirements.compatible(term) for term in terms)


@dataclass(frozen=True, slots=True)
class _Instance:
    classes: list[_Class]
    bins: list[_Bin]
    placeable: list[int]
    unplaceable: tuple[str, ...]


def _instance(
    pods: Sequence[Pod], config: ClusterConfig, catalog: Catalog, daemonsets: Sequence[Pod]
) -> _Instance:
    """The classes of `pods` and the bins of the config's (non-static) pools, shared by both bounds."""
    classes = _classes(p for p in pods if not p.is_daemonset and not p.is_mirror)
    if not classes:
        return _Instance([], [], [], ())
    templates = build_templates(
        tuple(p for p in config.node_pools if p.replicas is None),
        config.node_classes,
        catalog,
        tuple(daemonsets),
        config.settings,
    )
    bins: list[_Bin] = []
    for template in templates:
        for option in template.options:
            room = tuple(option.room.get(d) for d in DIMENSIONS)
            type_reqs = template.requirements.intersect(option.instance_type.requirements())
            cheapest: dict[frozenset[int], float] = {}
            for offering in option.offerings:
                offer_reqs = type_reqs.intersect(
                    Requirements.from_labels(
                        {
                            "topology.kubernetes.io/zone": offering.zone,
                            "karpenter.sh/capacity-type": offering.capacity_type,
                        }
                    )
                )
                served = frozenset(
                    k
                    for k, cls in enumerate(classes)
                    if all(cls.demand[r] <= room[r] for r in range(3))
                    and _serves(cls, template.taints, offer_reqs)
                )
                if served and offering.price < cheapest.get(served, float("inf")):
                    cheapest[served] = offering.price
            for served, price in cheapest.items():
                bins.append((price, (room[0], room[1], room[2]), served))
    bins = _undominated(bins)
    placeable = [k for k in range(len(classes)) if any(k in served for _, _, served in bins)]
    unplaceable = tuple(classes[k].example.key for k in range(len(classes)) if k not in placeable)
    return _Instance(classes, bins, placeable, unplaceable)


def fluid_lower_bound(
    pods: Sequence[Pod], config: ClusterConfig, catalog: Catalog, daemonsets: Sequence[Pod] = ()
) -> LowerBound:
    """The fluid LP bound for `pods` on the config's (non-static) pools; 0 for no pods."""
    return _fluid(_instance(pods, config, catalog, daemonsets))


def _fluid(instance: _Instance) -> LowerBound:
    if not instance.placeable:
        return LowerBound(0.0, len(instance.classes), len(instance.bins), instance.unplaceable)
    return _solve(instance.classes, instance.placeable, instance.bins, instance.unplaceable)


def _solve(
    classes: list[_Class],
    placeable: list[int],
    bins: list[_Bin],
    unplaceable: tuple[str, ...],
) -> LowerBound:
    import numpy as np
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    nb = len(bins)
    z_index: dict[tuple[int, int], int] = {}
    for k in placeable:
        for b, (_, _, served) in enumerate(bins):
            if k in served:
                z_index[(k, b)] = nb + len(z_index)
    nvar = nb + len(z_index)
    cost = np.zeros(nvar)
    cost[:nb] = [price for price, _, _ in bins]
    position = {k: i for i, k in enumerate(placeable)}
    eq_rows: list[int] = []
    eq_cols: list[int] = []
    for (k, _), v in z_index.items():
        eq_rows.append(position[k])
        eq_cols.append(v)
    a_eq = coo_matrix(([1.0] * len(eq_rows), (eq_rows, eq_cols)), shape=(len(placeable), nvar))
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    by_bin: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (k, b), v in z_index.items():
        by_bin[b].append((k, v))
    row = 0
    for b, (_, room, _) in enumerate(bins):
        for r in range(3):
            rows.append(row + r)
            cols.append(b)
            vals.append(-room[r] / _SCALE[r])
        for k, v in by_bin[b]:
            cls = classes[k]
            for r in range(3):
                if cls.demand[r]:
                    rows.append(row + r)
                    cols.append(v)
                    vals.append(cls.count * cls.demand[r] / _SCALE[r])
        row += 3
    for (k, b), v in z_index.items():
        if classes[k].one_per_node:
            rows.extend((row, row))
            cols.extend((v, b))
            vals.extend((float(classes[k].count), -1.0))
            row += 1
    a_ub = coo_matrix((vals, (rows, cols)), shape=(row, nvar))
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(row),
        A_eq=a_eq,
        b_eq=np.ones(len(placeable)),
        bounds=(0, None),
        method="highs",
    )
    if not result.success:
        raise RuntimeError(f"the fluid LP did not solve: {result.message}")
    return LowerBound(float(result.fun), len(classes), nb, unplaceable)


@dataclass(frozen=True, slots=True)
class BoundReport:
    """Both lower bounds of one set of pods; `best_per_hour` is the one to compare costs against."""

    fluid: LowerBound
    configuration: ConfigurationBound

    @property
    def best(self) -> str:
        """Which bound is tighter: "configuration" or "fluid" (ties go to the fluid one)."""
        return "configuration" if self.configuration.cost_per_hour > self.fluid.cost_per_hour else "fluid"

    @property
    def best_per_hour(self) -> float:
        return max(self.fluid.cost_per_hour, self.configuration.cost_per_hour)


def lower_bounds(
    pods: Sequence[Pod],
    config: ClusterConfig,
    catalog: Catalog,
    daemonsets: Sequence[Pod] = (),
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    enumeration_limit: int = ENUMERATION_LIMIT,
) -> BoundReport:
    """The fluid and configuration-LP bounds for `pods`; column generation stops after `time_limit` seconds."""
    import time

    instance = _instance(pods, config, catalog, daemonsets)
    fluid = _fluid(instance)
    started = time.perf_counter()
    classes = [instance.classes[k] for k in instance.placeable]
    local = {k: i for i, k in enumerate(instance.placeable)}
    bins = [
        (price, room, frozenset(local[k] for k in served if k in local))
        for price, room, served in instance.bins
    ]
    configuration, _ = generate_columns(
        [c.count for c in classes],
        [c.demand for c in classes],
        [c.one_per_node for c in classes],
        bins,
        deadline=started + time_limit,
        max_iterations=max_iterations,
        enumeration_limit=enumeration_limit,
    )
    return BoundReport(fluid, configuration)
