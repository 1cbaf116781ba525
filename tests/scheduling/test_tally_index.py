"""Topology counts through the label index (`solver_state.anchor`, `SolverState.tally` with `label`): the same
counts as scanning every placed pod, for every selector shape, before and after more pods are placed."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.model import Requirement
from longshore.core.pods import LabelSelector
from longshore.core.scheduling.solver_state import Placed, SolverState, anchor
from tests.builders import catalog, instance_type, node, pod, pool, scheduling_input

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")

SELECTORS = (
    LabelSelector((("app", "a"),)),
    LabelSelector((("app", "b"), ("tier", "web"))),
    LabelSelector((), (Requirement("app", "In", ("c",)),)),
    LabelSelector((), (Requirement("app", "In", ("a", "c")),)),
    LabelSelector((), (Requirement("tier", "Exists", ()),)),
    LabelSelector((("app", "absent"),)),
    LabelSelector(),
)


def _solver() -> SolverState:
    nodes = []
    for n in range(12):
        pods = [
            pod(
                f"p{n}-{i}",
                node_name=f"n{n}",
                labels={"app": "abc"[(n + i) % 3], **({"tier": "web"} if i % 2 else {})},
            )
            for i in range(5)
        ]
        nodes.append(node(f"n{n}", zone=ZONES[n % 3], pods=pods))
    inp = scheduling_input((), [pool()], catalog(instance_type("m5.xlarge")), nodes=tuple(nodes))
    return SolverState(inp)


def _counts(solver: SolverState, selector: LabelSelector, indexed: bool) -> dict[str, int]:
    return solver.tally(
        ("test", indexed, selector),
        wk.ZONE,
        lambda placed: placed.namespace == "default" and selector.matches(placed.labels),
        anchor(selector) if indexed else None,
    )


def test_indexed_counts_equal_full_scans_before_and_after_new_placements() -> None:
    solver = _solver()
    assert anchor(SELECTORS[0]) == ("app", "a") and anchor(SELECTORS[2]) == ("app", "c")
    assert anchor(SELECTORS[3]) is None and anchor(SELECTORS[6]) is None
    for selector in SELECTORS:
        assert _counts(solver, selector, True) == _counts(solver, selector, False), selector
    assert sum(_counts(solver, SELECTORS[-1], True).values()) == 60
    for i, app in enumerate("aabbcz"):  # placed after the indexes were built: kept up to date by `record`
        solver.record(Placed({"app": app, "tier": "web"}, "default", {wk.ZONE: ZONES[i % 3]}, 2))
    for selector in SELECTORS:
        assert _counts(solver, selector, True) == _counts(solver, selector, False), selector
