"""`consolidate-balanced`: the 30 -> 5 scale-down of consolidate-30-to-5 on a `consolidationPolicy: Balanced`
pool, on virtual time against the simulated world. Balanced still reaches the cheapest whole-node set here
(every move it takes saves a larger share of the pool's cost than of its disruption), announces each move
with its score, and breaks no rule. (A low-value move rejected with an Event is
`tests/planner/test_consolidation_events.py`.)"""

from __future__ import annotations

import re

import pytest

from tests.scenarios.optimum import whole_node_optimum
from tests.scenarios.test_disruption_scenarios import assert_clean, run

pytestmark = pytest.mark.slow

SCORE = re.compile(r"^score (\d+\.\d\d) >= threshold 0\.50 \(k: 2, savings [\d.]+%, disruption [\d.]+%\)$")


def test_balanced_consolidation_after_30_to_5_takes_only_moves_worth_their_disruption() -> None:
    runner, summary = run("consolidate-balanced")
    assert_clean(summary)
    assert summary["disruptions_by_reason"].get("underutilized", 0) >= 1
    assert summary["max_disrupting_at_once"] == {"general": 1}
    events = runner.world.cluster.store.view("events")
    approved = [e["message"] for e in events if e.get("reason") == "ConsolidationApproved"]
    candidates = [e["message"] for e in events if e.get("reason") == "ConsolidationCandidate"]
    assert approved and len(approved) == len(candidates)
    assert all(SCORE.match(m) and float(SCORE.match(m).group(1)) >= 0.5 for m in approved), approved  # type: ignore[union-attr]
    assert summary["cost_per_hour_final"] <= 1.05 * whole_node_optimum(runner, 500, 512 * 2**20, 5)
