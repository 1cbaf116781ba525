"""Issue #17 on the simulated cluster: capacity reservations (`capacity-reservation`).

The node class selects the reservations tagged team=ml (an ODCR of 2 and a Capacity Block of 1 m5.2xlarge);
30 pods arrive at 1m. The three reserved nodes are filled first and the rest go to spot; the untagged
reservation is never touched. The block's node is removed from 40 min before the block ends (the planner's
decision at exactly 20m, the block ending at 60m) through the disruption workflow; the ODCR cancelled at 30m
leaves its two nodes running, relabelled on-demand. Zero rule violations, no pod left unrun.
"""

from __future__ import annotations

import pytest

from longshore.core import labels as wk
from tests.scenarios.test_disruption_scenarios import assert_clean, run

pytestmark = pytest.mark.slow

ODCR, BLOCK, OTHER = "cr-0000000000000odcr", "cr-000000000000block", "cr-0000000000000other"


def test_reservations_fill_before_spot_then_the_block_drains_and_the_cancelled_odcr_turns_on_demand() -> None:
    runner, summary = run("capacity-reservation")
    assert_clean(summary)
    reservations = runner.world.reservations.reservations
    launched = {rid: len(r.instances) for rid, r in reservations.items()}
    assert launched == {ODCR: 2, BLOCK: 0, OTHER: 0}  # the block's instance was terminated at its drain
    # the first plan put 3 claims in the reservations and the rest on spot
    by_kind = summary["instances_launched_by_type"]
    assert by_kind.get("m5.2xlarge/on-demand") == 3  # reserved launches are on-demand fleets
    assert sum(n for k, n in by_kind.items() if k.endswith("/spot")) >= 1
    assert all(not k.endswith("/on-demand") or k.startswith("m5.2xlarge") for k in by_kind)
    # the Capacity Block's node: one forceful expiry, decided 40 min before the block's end
    assert summary["disruptions_by_reason"] == {"expired": 1}
    (drain,) = summary["drains"].values()
    assert 1200.0 <= drain["tainted_s"] < 1800.0  # after the decision at 20m, before EC2 reclaims at 30m
    # the cancelled ODCR: its two nodes run on, labelled on-demand, without the reservation id
    nodes = runner.world.cluster.store.view("nodes")
    odcr_nodes = [n for n in nodes if n["metadata"]["labels"].get(wk.CAPACITY_RESERVATION_TYPE) == "default"]
    assert len(odcr_nodes) == 2
    for node in odcr_nodes:
        labels = node["metadata"]["labels"]
        assert labels[wk.CAPACITY_TYPE] == "on-demand"
        assert wk.CAPACITY_RESERVATION_ID not in labels
    assert not [n for n in nodes if n["metadata"]["labels"].get(wk.CAPACITY_TYPE) == "reserved"]
