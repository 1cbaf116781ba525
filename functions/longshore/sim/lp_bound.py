"""The fluid LP lower bound on the hourly cost of running a set of pods (reference/performance.md §2.2), via HiGHS.

Theory of operation: the bound answers "what is the least any placement could pay per hour for these pods on
these pools", so a simulation can report how far the provisioner's final cluster is from it. Pods are grouped
into classes (same requests, tolerations and node requirements). Bins are what a pool could launch: for every
pool template (`core.scheduling.templates`: allocatable per type with the pool's kubelet settings, minus the
DaemonSet pods that land there) and every instance type, the offerings (zone x capacity type) are grouped by
the set of classes they can serve and only the cheapest of each group is kept. Then

    min  sum_b p_b y_b
    s.t. sum_b z_kb = 1                              every class is placed (fractionally)
         sum_k n_k d_kr z_kb <= C_br y_b             for cpu, memory and pods of every bin
         n_k z_kb <= y_b                             classes with hostname anti-affinity: one pod per node
         y, z >= 0

Every integer placement is a feasible point, so the optimum bounds every real cluster from below. It is
deliberately a *fluid* bound: whole nodes are not enforced, so a cluster whose pods cannot fill their nodes
(30 pods of 500m on a node with 15,890m allocatable) is above it by the unavoidable remainder.
`scipy.optimize.linprog(method="highs")` solves it; the sizes here (tens of classes, hundreds of bins) take
milliseconds.
"""

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
        t.topology_key == "kubernetes.io/hostname" and t.selector.matches(labels)
        for t in pod.pod_anti_affinity
    )


def _classes(pods: Iterable[Pod]) -> list[_Class]:
    groups: dict[tuple[object, ...], list[Pod]] = defaultdict(list)
    for pod in pods:
        key = (
            pod.requests,
            pod.node_selector,
            pod.required_node_terms,
            pod.tolerations,
            _self_anti_affine(pod),
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


def fluid_lower_bound(
    pods: Sequence[Pod], config: ClusterConfig, catalog: Catalog, daemonsets: Sequence[Pod] = ()
) -> LowerBound:
    """The fluid LP bound for `pods` on the config's (non-static) pools; 0 for no pods."""
    classes = _classes(p for p in pods if not p.is_daemonset and not p.is_mirror)
    if not classes:
        return LowerBound(0.0, 0, 0)
    templates = build_templates(
        tuple(p for p in config.node_pools if p.replicas is None),
        config.node_classes,
        catalog,
        tuple(daemonsets),
        config.settings,
    )
    bins: list[tuple[float, tuple[int, int, int], frozenset[int]]] = []  # price, room, classes served
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
    placeable = [k for k in range(len(classes)) if any(k in served for _, _, served in bins)]
    unplaceable = tuple(classes[k].example.key for k in range(len(classes)) if k not in placeable)
    if not placeable:
        return LowerBound(0.0, len(classes), len(bins), unplaceable)
    return _solve(classes, placeable, bins, unplaceable)


def _solve(
    classes: list[_Class],
    placeable: list[int],
    bins: list[tuple[float, tuple[int, int, int], frozenset[int]]],
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
    eq_rows: list[int] = []
    eq_cols: list[int] = []
    for (k, _), v in z_index.items():
        eq_rows.append(placeable.index(k))
        eq_cols.append(v)
    a_eq = coo_matrix(([1.0] * len(eq_rows), (eq_rows, eq_cols)), shape=(len(placeable), nvar))
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    row = 0
    for b, (_, room, _) in enumerate(bins):
        for r in range(3):
            rows.append(row + r)
            cols.append(b)
            vals.append(-room[r] / _SCALE[r])
        for (k, bb), v in z_index.items():
            if bb != b:
                continue
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
