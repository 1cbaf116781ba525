"""`make bench`: run every workload through the engine and the baseline, against the LP lower bound.

For each workload it prints one table row and writes everything to `bench/results/<timestamp>.json` (and
`latest.json`): the lower bound (fluid LP through HiGHS; the cheaper cover LP for the Karpenter mix, whose
thousands of per-node caps make the class LP slow), the engine's cost ÷ bound, the baseline's cost ÷ bound,
solve times, pods per second, and the engine's peak Python memory (tracemalloc, measured in a second run so
it does not slow the timed one). Every engine plan is also checked for unplaced pods.

Then the exact-optimum table (`bench/small.py`, `bench/exact.py`): ours ÷ the integer optimum of a MIP over
all maximal node patterns, on 24 seeded small instances with and without hostname and zone anti-affinity,
on-demand and spot.

Between them, the configuration-LP table (`bench.lower_bound.configuration`) on the spot mixes across zones,
the constrained mix and the new families (`bench/families.py`): the column-generation bound, a rounded integer plan over its columns, and
ours ÷ the best bound, round ÷ best bound (integrality) and ours ÷ round (the engine's own share).

Usage: `python -m bench.run [--quick] [--only main|small] [--cg-seconds S]` (`--quick` skips the 20,000-pod
cases; `--cg-seconds` is the column-generation budget per workload, 30 by default).

The engine runs with spot diversity off (`SpotDiversity(pool_share=1.0)`) in these tables, so they measure packing
and compare with earlier runs; the spot-diversity table gives the default rule's cost and pool shares.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.baseline import greedy
from bench.families import families
from bench.lower_bound import LowerBound, configuration, cover_bound, fluid_bound
from bench.small import run_small
from bench.workloads import CLASS, Workload, constrained_mix, deployment_mix, karpenter_mix
from longshore.core.model import Settings, SpotDiversity
from longshore.core.scheduling import Plan, SchedulingInput, solve

SPOT_POOL_SHARE = SpotDiversity().pool_share  # the default rule's share

RESULTS = Path(__file__).resolve().parent / "results"


def _cases(quick: bool) -> list[tuple[Callable[[], Workload], str]]:
    sizes = (100, 1000, 5000) if quick else (100, 1000, 5000, 20000)
    cases: list[tuple[Callable[[], Workload], str]] = [
        ((lambda n=n: karpenter_mix(n)), "cover") for n in sizes
    ]
    for n in (1000, 5000) if quick else (1000, 5000, 20000):
        cases.append(((lambda n=n: deployment_mix(n, spot_zones=False)), "fluid"))
        cases.append(((lambda n=n: deployment_mix(n, spot_zones=True)), "fluid"))
    cases += [((lambda: constrained_mix(1000)), "fluid"), ((lambda: constrained_mix(5000)), "fluid")]
    cases += [((lambda w=w: w), "fluid") for w in families()]
    return cases


#: The workloads the configuration LP runs on (bench.lower_bound.configuration): the spot mixes across zones,
#: constrained and new families.
CONFIGURATION_PREFIXES = (
    "deploy-spot-",
    "constrained-",
    "memory-heavy-",
    "microservices-",
    "odd-shapes-",
    "spot-batch-",
)


def run_configuration(
    workloads: list[Workload], rows: list[dict[str, Any]], time_limit: float = 30.0
) -> list[dict[str, Any]]:
    """The configuration-LP bound and rounded plan of each workload, against the engine's cost in `rows`."""
    header = (
        f"{'workload':<26} {'fluid':>9} {'config':>9} {'master':>9} {'conv':>4} {'round':>9} {'ours':>9} {'ours/best':>9} "
        f"{'round/best':>10} {'ours/round':>10} {'CG s':>5}"
    )
    print(header)
    print("-" * len(header))
    by_name = {row["workload"]: row for row in rows}
    result = []
    for workload in workloads:
        row = by_name[workload.name]
        found = configuration(workload, time_limit=time_limit, round_limit=10.0)
        best = max(row["lower_bound_per_hour"], found.bound)
        ours = row["cost_per_hour"]
        entry = {
            "workload": workload.name,
            "fluid_per_hour": row["lower_bound_per_hour"],
            "configuration_per_hour": round(found.bound, 4),
            "configuration_converged": found.converged,
            "configuration_master_per_hour": round(found.master, 4),
            "configuration_iterations": found.iterations,
            "columns": found.columns,
            "rounded_per_hour": round(found.rounded, 4),
            "rounded_nodes": found.rounded_nodes,
            "cost_per_hour": ours,
            "ratio_best": round(ours / best, 4),
            "rounded_ratio_best": round(found.rounded / best, 4),
            "ratio_rounded": round(ours / found.rounded, 4),
            "seconds": round(found.seconds, 1),
        }
        result.append(entry)
        print(
            f"{workload.name:<26} {entry['fluid_per_hour']:>9.3f} {found.bound:>9.3f} {found.master:>9.3f} "
            f"{'yes' if found.converged else 'no':>4} {found.rounded:>9.3f} {ours:>9.3f} "
            f"{entry['ratio_best']:>9.4f} {entry['rounded_ratio_best']:>10.4f} {entry['ratio_rounded']:>10.4f} "
            f"{found.seconds:>5.0f}",
            flush=True,
        )
    return result


def solve_input(workload: Workload, spot_pool_share: float = 1.0) -> SchedulingInput:
    """What the engine is asked for `workload`; spot diversity off by default (the tables measure packing;
    its cost is the diversity table's)."""
    return SchedulingInput(
        pods=workload.pods,
        pools=workload.pools,
        node_classes=(CLASS,),
        catalog=workload.catalog,
        settings=Settings(spot_diversity=SpotDiversity(pool_share=spot_pool_share)),
    )


def _solve(workload: Workload, spot_pool_share: float = 1.0) -> tuple[Plan, float]:
    """The engine's plan and solve time (`solve_input`)."""
    inp = solve_input(workload, spot_pool_share)
    gc.collect()
    start = time.perf_counter()
    plan = solve(inp)
    return plan, time.perf_counter() - start


def _peak_mib(workload: Workload) -> float:
    inp = solve_input(workload)
    gc.collect()
    tracemalloc.start()
    solve(inp)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def _largest_pool(plan: Plan) -> float:
    """The largest spot (type, zone) pool's share of the plan's spot vCPU (0 without spot)."""
    load: dict[tuple[str, str], int] = {}
    for claim in plan.new_claims:
        if claim.capacity_type == "spot":
            key = (claim.instance_type, claim.zone)
            load[key] = load.get(key, 0) + claim.allocatable.get("cpu")
    return max(load.values()) / sum(load.values()) if load else 0.0


def run_diversity(workloads: list[Workload]) -> list[dict[str, Any]]:
    """Spot diversity's cost: each workload with spot claims, undiversified and with the default rule."""
    header = (
        f"{'workload':<26} {'spot nodes':>10} {'top pool':>8} {'cost $/h':>9} {'diverse':>9} "
        f"{'top pool':>8} {'cost +%':>7}"
    )
    print(header)
    print("-" * len(header))
    result = []
    for workload in workloads:
        plain, _ = _solve(workload)
        spot = sum(1 for c in plain.new_claims if c.capacity_type == "spot")
        if not spot:
            continue
        diverse, _ = _solve(workload, SPOT_POOL_SHARE)
        extra = diverse.cost_per_hour / plain.cost_per_hour - 1
        entry = {
            "workload": workload.name,
            "spot_nodes": spot,
            "largest_pool_share": round(_largest_pool(plain), 3),
            "cost_per_hour": round(plain.cost_per_hour, 4),
            "diverse_cost_per_hour": round(diverse.cost_per_hour, 4),
            "diverse_largest_pool_share": round(_largest_pool(diverse), 3),
            "cost_increase": round(extra, 5),
        }
        result.append(entry)
        print(
            f"{workload.name:<26} {spot:>10} {entry['largest_pool_share']:>8.3f} {plain.cost_per_hour:>9.3f} "
            f"{diverse.cost_per_hour:>9.3f} {entry['diverse_largest_pool_share']:>8.3f} {100 * extra:>7.2f}",
            flush=True,
        )
    return result


def run(quick: bool = False, kept: list[Workload] | None = None) -> list[dict[str, Any]]:
    """The main table; the workloads the configuration LP will run on are appended to `kept`."""
    rows: list[dict[str, Any]] = []
    header = (
        f"{'workload':<26} {'pods':>6} {'types':>5} {'bound $/h':>10} {'ours/LB':>8} {'base/LB':>8} "
        f"{'ours s':>7} {'base s':>7} {'speedup':>7} {'pods/s':>8} {'peak MiB':>8} {'LB s':>6}"
    )
    print(header)
    print("-" * len(header))
    for build, bound_kind in _cases(quick):
        workload = build()
        bound: LowerBound = cover_bound(workload) if bound_kind == "cover" else fluid_bound(workload)
        plan, seconds = _solve(workload)
        start = time.perf_counter()
        base = greedy(workload)
        base_seconds = time.perf_counter() - start
        peak = _peak_mib(workload) if workload.size >= 20000 else None
        row = {
            "workload": workload.name,
            "pods": workload.size,
            "instance_types": len(workload.catalog),
            "bound": bound_kind,
            "lower_bound_per_hour": round(bound.cost, 4),
            "lower_bound_seconds": round(bound.seconds, 3),
            "cost_per_hour": round(plan.cost_per_hour, 4),
            "ratio": round(plan.cost_per_hour / bound.cost, 4),
            "nodes": len(plan.new_claims),
            "unschedulable": len(plan.unschedulable),
            "seconds": round(seconds, 4),
            "pods_per_second": round(workload.size / seconds),
            "baseline_cost_per_hour": round(base.cost, 4),
            "baseline_ratio": round(base.cost / bound.cost, 4),
            "baseline_nodes": base.nodes,
            "baseline_seconds": round(base_seconds, 4),
            "speedup": round(base_seconds / seconds, 2),
            "peak_mib": round(peak, 1) if peak is not None else None,
        }
        rows.append(row)
        if kept is not None and workload.name.startswith(CONFIGURATION_PREFIXES):
            kept.append(workload)
        print(
            f"{row['workload']:<26} {row['pods']:>6} {row['instance_types']:>5} {bound.cost:>10.3f} "
            f"{row['ratio']:>8.4f} {row['baseline_ratio']:>8.4f} {seconds:>7.3f} {base_seconds:>7.3f} "
            f"{row['speedup']:>7.1f} {row['pods_per_second']:>8} "
            f"{(f'{peak:.0f}' if peak is not None else '-'):>8} {bound.seconds:>6.2f}",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 20,000-pod cases")
    parser.add_argument("--only", choices=("main", "small"), help="run one part only")
    parser.add_argument(
        "--cg-seconds", type=float, default=30.0, help="column generation budget per workload"
    )
    args = parser.parse_args()
    started = datetime.now(UTC)
    kept: list[Workload] = []
    rows = run(quick=args.quick, kept=kept) if args.only in (None, "main") else []
    print()
    configured = [w for w in kept if w.name.startswith(CONFIGURATION_PREFIXES)]
    configured_rows = run_configuration(configured, rows, args.cg_seconds) if configured else []
    print()
    diversity = run_diversity(kept) if kept else []
    print()
    small = run_small() if args.only in (None, "small") else []
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {
        "date": started.isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "results": rows,
        "configuration": configured_rows,
        "spot_diversity": diversity,
        "small_instances": small,
    }
    text = json.dumps(document, indent=2)
    (RESULTS / f"{started.strftime('%Y%m%dT%H%M%SZ')}.json").write_text(text + "\n", encoding="utf-8")
    (RESULTS / "latest.json").write_text(text + "\n", encoding="utf-8")
    print(f"\nwritten to {RESULTS / 'latest.json'}")


if __name__ == "__main__":
    main()
