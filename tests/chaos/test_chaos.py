"""`longshore chaos`: deterministic random scenarios, judged by every rule; a few seeds run in the suite
(`make chaos` runs 200)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from longshore_sim import chaos
from longshore_sim.cli.chaos import command
from longshore_sim.scenario import load_scenario


def test_a_seed_always_generates_the_same_scenario_and_every_fault_kind_appears() -> None:
    assert chaos.generate(7) == chaos.generate(7)
    assert chaos.generate(7) != chaos.generate(8)
    kinds = {
        next(k for k in step if k != "at") for seed in range(1, 30) for step in chaos.generate(seed)["steps"]
    }
    assert kinds >= {
        "scale",
        "event",
        "unavailable",
        "crash",
        "apiFaults",
        "coldStart",
        "ami",
        "rotate",
        "deleteNode",
        "dynamoThrottle",
        "loseClaimTable",
        "apiTimeouts",
        "config",
    }


def test_a_kind_added_later_leaves_the_steps_of_the_older_kinds_as_they_were() -> None:
    for seed in (7, 52):
        older = chaos.generate(seed, chaos.MIXED)["steps"]
        added = ("apiTimeouts", "config")  # the steps of the kinds of chaos.ADDED
        assert not any(key in step for step in older for key in added)
        assert [s for s in chaos.generate(seed)["steps"] if not any(key in s for key in added)] == older


@pytest.mark.slow
def test_kubernetes_api_timeouts_are_survived() -> None:
    """A seed of scale changes and `k8s-timeout` faults only, with an outage of every request served but
    unanswered (seed 3: 117 s) and timed-out evictions: no rule broken, no exception."""
    document = chaos.generate(3, ["scale", "k8s-timeout"])
    assert any(s.get("apiTimeouts", {}).get("served") for s in document["steps"])
    assert [r.problems for r in chaos.run([3], ["scale", "k8s-timeout"], echo=lambda _: None)] == [[]]


def test_a_report_is_a_scenario_longshore_simulate_reads(tmp_path: Path) -> None:
    path = tmp_path / "chaos-7.yaml"
    path.write_text(yaml.safe_dump(chaos.replayable(chaos.generate(7)), sort_keys=False))
    scenario = load_scenario(path)
    assert scenario.name == "chaos-7"
    assert all(p.is_file() for p in scenario.config_paths())
    assert all(scenario.resolve(w).is_file() for w in scenario.workloads)


@pytest.mark.slow
def test_two_seeds_run_clean_end_to_end() -> None:
    result = CliRunner().invoke(command, ["--seeds", "0", "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "chaos: 1 seeds, 0 violations"
    assert [r.problems for r in chaos.run([3], echo=lambda _: None)] == [[]]


# Seeds that once found a defect, with the defect; each must stay clean. They replay the scenario that found it:
# the kinds of that time (`chaos.MIXED`), without the steps of the kinds added since.
REGRESSIONS = {
    52: "a drifted node's pod was moved onto a node still booting and waited there unschedulable",
    81: "after the claim table was lost, a re-adopted replacement still booting counted as room for a drifted "
    "node's 7 pods (the planner now never moves pods onto a node that is not initialized, as Karpenter)",
    134: "the same class as 81, with 3 pods",
    8: "a drift surge decided within its budget was counted a budget violation because a node was deleted by "
    "hand before the surge's taint (the checker now judges budgets at the decision, as Karpenter does)",
    25: "a rotation's replacement, still booting, counted as free room for a consolidation: an evicted pod "
    "had nowhere to run (the workflow's replacement claims now name the node they replace)",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", sorted(REGRESSIONS))
def test_seeds_that_found_defects_stay_clean(seed: int) -> None:
    [result] = chaos.run([seed], chaos.MIXED, echo=lambda _: None)
    assert result.problems == [], REGRESSIONS[seed]


# Seeds that found a defect with every fault kind of their time (`chaos.FAULT_KINDS`, `longshore chaos --seed N`).
REGRESSIONS_ALL_KINDS = {
    32: "pods of a scale-up were bound to a drift surge's replacement while it booted, so the drain evicted 3 "
    "pods with nowhere to run (the workflow now checks the room before the taint and launches another "
    "replacement for the pods left without a home: `ReplacementLauncher.top_up`)",
    82: "the same class as 32, with 3 pods",
    87: "the claim table was lost while a drift replacement booted; its Node joined with the unregistered taint "
    "and was re-adopted as `registered`, so the taint stayed and 3 pending pods were planned onto it forever "
    "(a re-adopted Node that never registered now gets a `launched` claim, registered next pass)",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", sorted(REGRESSIONS_ALL_KINDS))
def test_seeds_that_found_defects_with_every_kind_stay_clean(seed: int) -> None:
    [result] = chaos.run([seed], chaos.FAULT_KINDS, echo=lambda _: None)
    assert result.problems == [], REGRESSIONS_ALL_KINDS[seed]
