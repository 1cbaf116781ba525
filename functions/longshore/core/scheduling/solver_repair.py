"""Phase 6: take pods back off new claims where a domain spread split left its skew broken."""

from __future__ import annotations

from dataclasses import replace

from longshore.core import labels as wk
from longshore.core.pods import Pod
from longshore.core.resources import Resources
from longshore.core.scheduling.solver_state import (
    HOSTNAME,
    PodClass,
    SolverState,
    daemon_matches,
    spread_matches,
)


def repair_spreads(solver: SolverState, classes: list[PodClass]) -> None:
    """Take pods back off new claims where a spread split left its skew broken.

    Domain spreads are split into per-domain quotas up front; when a pool limit (or no fitting type)
    then strands part of one domain's quota, the other domains end up ahead by more than maxSkew and
    kube-scheduler would refuse those pods. Only then (some pod is unschedulable), count every node's
    matching pods per domain as the final state will, and take one offending pod off a new claim at a
    time until every such spread holds (claims left empty are dropped)."""
    checks = [
        (cls, spread)
        for cls in classes
        if cls.variant is not None
        for spread in cls.variant.spreads
        if spread.topology_key != HOSTNAME and spread.when_unsatisfiable == "DoNotSchedule"
    ]
    if not checks:
        return
    by_key = {pod.key: pod for pod in solver.inp.pods}
    repaired = True
    while repaired:
        repaired = False
        hosts = _hosts(solver, by_key)
        for cls, spread in checks:
            owner, key = cls.example, spread.topology_key
            counts = {
                labels[key]: 0 for labels, _, _ in hosts if key in labels and daemon_matches(owner, labels)
            }
            for labels, pods, _ in hosts:
                value = labels.get(key)
                if value in counts:
                    counts[value] += sum(
                        1 for p in pods if spread_matches(owner, spread, p.label_map(), p.namespace)
                    )
            few = spread.min_domains is not None and len(counts) < spread.min_domains
            floor = 0 if few else min(counts.values(), default=0)
            mine = {p.key for p in cls.pods}
            for labels, pods, index in hosts:
                value = labels.get(key)
                if index < 0 or value not in counts or counts[value] - floor <= spread.max_skew:
                    continue
                victim = next((p for p in reversed(pods) if p.key in mine), None)
                if victim is None:
                    continue
                _take_off(solver, index, victim, cls.requests)
                solver.unschedulable.append(
                    (
                        victim.key,
                        f"topology spread on {key} (maxSkew {spread.max_skew}): pods of the spread "
                        "that could not be placed elsewhere leave this one above the skew",
                    )
                )
                repaired = True
                break
            if repaired:
                break
    solver.claims = [claim for claim in solver.claims if claim.pods]


def _hosts(solver: SolverState, by_key: dict[str, Pod]) -> list[tuple[dict[str, str], list[Pod], int]]:
    """Every node and new claim as (labels, the pods counted on it, claim index or -1), as the final
    state will be."""
    hosts: list[tuple[dict[str, str], list[Pod], int]] = []  # (labels, pods, claim index or -1)
    for state in (*solver.nodes, *solver.in_flight):
        running = [p for p in state.pods if p.counts_for_topology()]
        hosts.append((state.labels, running + [by_key[k] for k in state.placed], -1))
    for index, claim in enumerate(solver.claims):
        labels = {
            **dict(claim.labels),
            wk.ZONE: claim.zone,
            wk.CAPACITY_TYPE: claim.capacity_type,
            HOSTNAME: claim.name,
        }
        hosts.append((labels, [by_key[k] for k in claim.pods], index))
    return hosts


def _take_off(solver: SolverState, index: int, pod: Pod, requests: Resources) -> None:
    claim = solver.claims[index]
    solver.claims[index] = replace(
        claim,
        pods=tuple(k for k in claim.pods if k != pod.key),
        requests=(claim.requests - requests).clamp_non_negative(),
    )
