"""When a provisioner invocation ends: after a quiet pass, not at its timeout (what keeps Lambda cheap); and the
invocation report the provisioner and the planner share.

A quiet pass has no pods to plan, none the scheduler has yet to judge, and no claim between launch and
initialization. Until then the invocation keeps polling; `exit_when_quiet=False` restores the old loop that
runs until shortly before the timeout.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longshore.services.disruption_invocation import PlannerTotals
from longshore.services.invocation import InvocationReport
from longshore.services.provisioner import ProvisionerSettings, ProvisionerTotals
from longshore_sim.world import SimulatedWorld
from tests.provisioning.conftest import running

MakeWorld = Callable[..., SimulatedWorld]


@pytest.mark.slow
def test_a_quiet_cluster_costs_one_pass(make_world: MakeWorld) -> None:
    world = make_world()
    started = world.clock.now()

    report = world.invoke(timeout_s=120)

    assert report.stopped == "quiet" and report.passes == 1
    assert world.clock.now() - started < 1, "no idle polling was billed"


@pytest.mark.slow
def test_without_exit_when_quiet_the_loop_runs_until_shortly_before_the_timeout(
    make_world: MakeWorld,
) -> None:
    world = make_world()
    started = world.clock.now()

    report = world.invoke(timeout_s=120, settings=ProvisionerSettings(exit_when_quiet=False))

    assert report.stopped == "deadline" and report.passes > 50
    assert 120 - 15 - 1 <= world.clock.now() - started <= 120


@pytest.mark.slow
def test_a_pod_the_scheduler_has_not_judged_yet_keeps_the_invocation_polling(make_world: MakeWorld) -> None:
    world = make_world()
    world.cluster.store.admission.clear()  # no webhook: this invocation is the only one
    world.cluster.scale("inflate", 2)
    world.cluster.deployments.reconcile()  # the controllers create the pods; the scheduler has not run
    world.cluster.replicasets.reconcile()
    assert len(world.cluster.pods()) == 2 and not any(
        p["status"].get("conditions") for p in world.cluster.pods()
    )
    started = world.clock.now()

    report = world.invoke(timeout_s=120)

    assert len(running(world)) == 2, (
        "it waited for the verdict, planned, launched and saw the nodes initialize"
    )
    assert report.stopped == "quiet" and report.totals.launched
    assert world.clock.now() - started < 120 - 15


@pytest.mark.slow
def test_the_schedule_retries_what_a_quiet_invocation_left(make_world: MakeWorld) -> None:
    world = make_world()
    world.cluster.store.admission.clear()  # no webhook: only the every-minute schedule runs the provisioner
    world.invoke(timeout_s=120)  # quiet
    world.cluster.scale("inflate", 1)  # a pod appears between two scheduled invocations

    reports = world.run_schedule(60 + 120)

    assert len(reports) >= 2 and reports[0].stopped == "quiet"
    assert len(running(world)) == 1, "the next scheduled invocation provisioned it"


def test_both_function_loops_report_an_invocation_in_the_same_envelope() -> None:
    provisioner = InvocationReport(2, ProvisionerTotals(("a-1",), ("a-2",), 1), "quiet")
    planner = InvocationReport(3, PlannerTotals(("empty-i-1",), ()), "lease-held")

    assert provisioner.to_dict() == {
        "passes": 2,
        "launched": ["a-1"],
        "failed": ["a-2"],
        "lease_waits": 1,
        "stopped": "quiet",
    }
    assert planner.to_dict() == {
        "passes": 3,
        "started": ["empty-i-1"],
        "pending": [],
        "stopped": "lease-held",
    }
    for report in (provisioner.to_dict(), planner.to_dict()):
        keys = list(report)
        assert (keys[0], keys[-1]) == ("passes", "stopped")
