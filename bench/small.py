"""Small seeded instances the exact optimum can be computed for (`bench/exact.py`), and the engine against it.

`small_instances(count, seed)` draws `count` instances, each from its own seed: 20–80 pods in 2–5
deployments (cpu 250m–4, 1–8 GiB per vCPU), 10–25 instance types drawn from the c/m/r types of 2–16 vCPU
of the real us-east-1 catalog, three zones. The instances cycle through four constraint variants — none,
hostname anti-affinity (one or two deployments, one pod per node), zone anti-affinity (one deployment of
2–3 pods, one per zone), both — and two capacity settings — on-demand only, or spot and on-demand (where one
deployment may be on-demand only by nodeSelector). The same instance is built as engine input (pods, one
pool, a catalog of just those types) and as plain numbers for the MIP (allocatable from
`core.allocatable` with default settings and no DaemonSets, as `bench/lower_bound.py` does).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from bench.catalogs import real_catalog
from bench.exact import ExactClass, ExactResult, ExactType, exact_optimum
from bench.workloads import CATEGORIES, CLASS, ZONES, Workload, _pod, _pool, _term
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable
from longshore.core.catalog import GIB, Catalog
from longshore.core.model import Requirement, Settings
from longshore.core.requirements import Requirements
from longshore.core.scheduling import SchedulingInput, solve

VARIANTS = ("none", "hostname", "zone", "both")


@dataclass(frozen=True)
class _Deployment:
    name: str
    cpu: int
    memory: int
    replicas: int
    kind: str  # "free", "on-demand", "hostname" (anti-affinity), "zone" (anti-affinity)


@dataclass(frozen=True)
class SmallInstance:
    name: str
    workload: Workload
    classes: tuple[ExactClass, ...]
    types: tuple[ExactType, ...]


def _deployments(rng: random.Random, variant: str, spot: bool) -> list[_Deployment]:
    kinds = rng.randint(2, 5)
    total = rng.randint(20, 80)
    special: list[str] = []
    if variant in ("hostname", "both"):
        special += ["hostname"] * rng.randint(1, 2)
    if variant in ("zone", "both"):
        special.append("zone")
    if spot and rng.random() < 0.5:
        special.append("on-demand")
    kinds = max(kinds, len(special) + 1)
    chosen = special + ["free"] * (kinds - len(special))
    weights = [rng.gammavariate(1.0, 1.0) + 0.2 for _ in chosen]
    result = []
    for k, kind in enumerate(chosen):
        milli = rng.choice((250, 500, 1000, 1500, 2000, 4000))
        per_cpu = rng.choice((1, 2, 4, 8))
        replicas = max(1, round(weights[k] / sum(weights) * total))
        if kind == "zone":
            replicas = rng.randint(2, 3)
        elif kind == "hostname":
            replicas = min(replicas, rng.randint(3, 12))
        result.append(_Deployment(f"d{k}", milli, milli * per_cpu * GIB // 1000, replicas, kind))
    short = total - sum(d.replicas for d in result)  # the capped deployments leave the rest to the free ones
    free = [i for i, d in enumerate(result) if d.kind in ("free", "on-demand")]
    for j, i in enumerate(free):
        share = short // len(free) + (1 if j < short % len(free) else 0)
        d = result[i]
        result[i] = _Deployment(d.name, d.cpu, d.memory, max(1, d.replicas + share), d.kind)
    return result


def _spec(deployment: _Deployment) -> dict[str, Any]:
    labels = {"app": deployment.name}
    if deployment.kind == "on-demand":
        return {"nodeSelector": {wk.CAPACITY_TYPE: "on-demand"}}
    if deployment.kind in ("hostname", "zone"):
        key = wk.HOSTNAME if deployment.kind == "hostname" else wk.ZONE
        return {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term("app", labels["app"], key)]
                }
            }
        }
    return {}


def small_instance(seed: int, variant: str, spot: bool) -> SmallInstance:
    rng = random.Random(seed)
    pool_reqs = [
        CATEGORIES,
        Requirement(wk.CAPACITY_TYPE, "In", ("spot", "on-demand") if spot else ("on-demand",)),
        Requirement(wk.ZONE, "In", ZONES),
    ]
    allowed_by_pool = Requirements.of(pool_reqs)
    full = real_catalog("us-east-1")
    candidates = [it for it in full if it.requirements().compatible(allowed_by_pool) and 2 <= it.vcpus <= 16]
    chosen = rng.sample(candidates, rng.randint(10, 25))
    deployments = _deployments(rng, variant, spot)
    rooms = {it.name: allocatable(it, None, None, Settings()) for it in chosen}
    biggest_cpu = max(r.get("cpu") for r in rooms.values())
    biggest_mem = max(r.get("memory") for r in rooms.values())
    deployments = [  # every pod fits some chosen type (shrink the rare one that does not)
        _Deployment(d.name, min(d.cpu, biggest_cpu), min(d.memory, biggest_mem // 2), d.replicas, d.kind)
        for d in deployments
    ]
    pods = tuple(
        _pod(f"{d.name}-{i}", f"{d.cpu}m", f"{d.memory // 2**20}Mi", {"app": d.name}, _spec(d))
        for d in deployments
        for i in range(d.replicas)
    )
    name = f"small-{seed}-{variant}-{'spot' if spot else 'od'}"
    workload = Workload(name, pods, (_pool(pool_reqs),), Catalog(tuple(chosen), region="us-east-1"), True)
    types = tuple(
        ExactType(
            it.name,
            (rooms[it.name].get("cpu"), rooms[it.name].get("memory"), rooms[it.name].get("pods")),
            tuple(
                (o.zone, o.capacity_type, o.price)
                for o in it.offerings
                if o.available and o.allowed_by(allowed_by_pool)
            ),
        )
        for it in chosen
    )
    everywhere = frozenset(
        (z, ct) for z in ZONES for ct in (("spot", "on-demand") if spot else ("on-demand",))
    )
    classes = tuple(
        ExactClass(
            d.name,
            d.cpu,
            d.memory // 2**20 * 2**20,
            d.replicas,
            frozenset((z, "on-demand") for z in ZONES) if d.kind == "on-demand" else everywhere,
            one_per_node=d.kind == "hostname",
            one_per_zone=d.kind == "zone",
        )
        for d in deployments
    )
    return SmallInstance(name, workload, classes, types)


def small_instances(count: int = 24, seed: int = 2026) -> list[SmallInstance]:
    return [small_instance(seed * 1000 + i, VARIANTS[i % 4], spot=(i // 4) % 2 == 1) for i in range(count)]


def compare(instance: SmallInstance, time_limit: float = 60.0) -> dict[str, Any]:
    """The engine's plan and the exact optimum of one instance, as a result row."""
    workload = instance.workload
    started = time.perf_counter()
    plan = solve(
        SchedulingInput(
            pods=workload.pods, pools=workload.pools, node_classes=(CLASS,), catalog=workload.catalog
        )
    )
    seconds = time.perf_counter() - started
    exact: ExactResult = exact_optimum(instance.classes, instance.types, time_limit=time_limit)
    return {
        "workload": instance.name,
        "pods": workload.size,
        "instance_types": len(instance.types),
        "classes": len(instance.classes),
        "cost_per_hour": round(plan.cost_per_hour, 4),
        "nodes": len(plan.new_claims),
        "unschedulable": len(plan.unschedulable),
        "seconds": round(seconds, 4),
        "optimum_per_hour": round(exact.cost, 4),
        "optimum_proven": exact.optimal,
        "optimum_bound_per_hour": round(exact.bound, 4),
        "optimum_nodes": exact.nodes,
        "patterns": exact.patterns,
        "mip_seconds": round(exact.seconds, 2),
        "ratio": round(plan.cost_per_hour / exact.cost, 4),
    }


def run_small(count: int = 24, seed: int = 2026) -> list[dict[str, Any]]:
    """Print the ours/OPT table of `count` small instances and return its rows."""
    header = (
        f"{'small instance':<30} {'pods':>4} {'types':>5} {'ours $/h':>9} {'OPT $/h':>9} {'ours/OPT':>8} "
        f"{'proven':>6} {'patterns':>8} {'MIP s':>6}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for instance in small_instances(count, seed):
        row = compare(instance)
        rows.append(row)
        print(
            f"{row['workload']:<30} {row['pods']:>4} {row['instance_types']:>5} {row['cost_per_hour']:>9.4f} "
            f"{row['optimum_per_hour']:>9.4f} {row['ratio']:>8.4f} {'yes' if row['optimum_proven'] else 'NO':>6} "
            f"{row['patterns']:>8} {row['mip_seconds']:>6.2f}",
            flush=True,
        )
    ratios = [row["ratio"] for row in rows]
    at_optimum = sum(1 for r in ratios if r <= 1.0001)
    print(
        f"{len(rows)} instances: at the optimum {at_optimum}, within 2 % {sum(1 for r in ratios if r <= 1.02)}, "
        f"worst ours/OPT {max(ratios):.4f}, geometric mean {_geomean(ratios):.4f}"
    )
    return rows


def _geomean(values: list[float]) -> float:
    import math

    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0
