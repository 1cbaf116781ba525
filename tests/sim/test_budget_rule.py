"""The checker's budget rule judges a graceful disruption at its decision, as Karpenter's budgets do: two
graceful nodes decided at once beyond the budget fail, a node deleted by hand before a decision counts against
it, and one deleted by hand after a surge's decision (before its taint) does not (chaos seed 8)."""

from __future__ import annotations

from longshore_sim.checker import REASON_ANNOTATION, RuleChecker
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi.store import ObjectStore
from longshore_sim.manifest_reads import DISRUPTED_TAINT_KEY
from tests.sim.test_availability_rules import one_pool

CONFIG = one_pool('  disruption:\n    budgets: [{nodes: "1"}]\n')


def world() -> tuple[ObjectStore, RuleChecker, VirtualClock]:
    clock = VirtualClock(start=1_000.0)
    store = ObjectStore(clock=clock)
    for name in ("a", "b", "c"):
        store.create("nodes", {"metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}}})
    return store, RuleChecker(store, CONFIG, origin=1_000.0), clock


def disrupt(store: ObjectStore, name: str, reason: str) -> None:
    def change(node: dict[str, object]) -> None:
        node["metadata"]["annotations"] = {REASON_ANNOTATION: reason}  # type: ignore[index]
        node["spec"] = {"taints": [{"key": DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]}

    store.modify("nodes", name, None, change)


def test_two_graceful_disruptions_decided_together_beyond_the_budget_fail() -> None:
    store, checker, clock = world()
    checker.scan(clock.now())
    clock.advance_to(1_010.0)
    disrupt(store, "a", "drifted")
    disrupt(store, "b", "drifted")
    checker.scan(clock.now())
    assert checker.violations == [
        "t=10s: 2 node(s) of pool default disrupting at once (drifted among them); its budgets allow 1 for Drifted"
    ]


def test_a_node_deleted_by_hand_before_the_decision_counts_against_it() -> None:
    store, checker, clock = world()
    clock.advance_to(1_005.0)
    disrupt(store, "b", "manual")
    checker.scan(clock.now())
    clock.advance_to(1_030.0)
    checker.note_decided("a", 1_010.0)  # a surge: decided at 10 s, tainted once its replacement is up
    disrupt(store, "a", "drifted")
    checker.scan(clock.now())
    assert len(checker.violations) == 1 and checker.violations[0].startswith("t=10s: 2 node(s)")


def test_a_node_deleted_by_hand_after_a_surge_was_decided_does_not_make_it_a_violation() -> None:
    store, checker, clock = world()
    checker.note_decided("a", 1_010.0)
    clock.advance_to(1_020.0)
    disrupt(store, "b", "manual")
    checker.scan(clock.now())
    clock.advance_to(1_030.0)
    disrupt(store, "a", "drifted")
    checker.scan(clock.now())
    assert checker.violations == []
    assert checker.max_disrupting["default"] == 2
