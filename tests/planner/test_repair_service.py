"""Node auto-repair through the planner service: the unhealthy node goes through the disruption workflow
(reason `unhealthy`), a pool too sick is held off with a `NodeRepairBlocked` Warning and metric, and EC2
status checks come through the `InstanceStatuses` port."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from longshore.core import telemetry
from longshore.core.disruption.state import InstanceStatus
from tests.planner.fakes import PlannerWorld, a_pool, cluster_config
from tests.workflow.fakes import START, stamp


def _unknown_since(w: PlannerWorld, node: str, seconds_ago: float) -> None:
    w.cluster.nodes[node]["status"]["conditions"] = [
        {"type": "Ready", "status": "Unknown", "lastTransitionTime": stamp(START - seconds_ago)}
    ]


def _world(*names: str) -> PlannerWorld:
    w = PlannerWorld(cluster_config(a_pool(policy="WhenEmpty", after=None)))
    for name in names:
        w.add_node(name)
        w.add_pod(f"web-{name}", name, cpu="1")
    return w


def test_a_node_not_ready_past_30_minutes_is_drained_and_terminated_through_the_workflow() -> None:
    w = _world("sick", "ok-1", "ok-2")
    _unknown_since(w, "sick", 31 * 60)
    w.run(120)
    assert "sick" not in w.cluster.nodes and w.world.instances.state("i-sick") == "terminated"
    assert w.metrics.total(telemetry.DISRUPTION_DECISIONS, Reason="unhealthy") == 1
    assert w.metrics.total(telemetry.NODES_DISRUPTED, Reason="unhealthy") == 1
    (disrupting,) = w.events("sick", "Disrupting")
    assert "unhealthy: condition Ready=Unknown" in disrupting.message
    assert {"ok-1", "ok-2"} <= set(w.cluster.nodes)


def test_more_than_20_percent_unhealthy_holds_repair_off_with_an_event_and_a_metric() -> None:
    w = _world("sick-1", "sick-2", "ok")
    _unknown_since(w, "sick-1", 31 * 60)
    _unknown_since(w, "sick-2", 40 * 60)
    w.run(60)
    assert {"sick-1", "sick-2", "ok"} <= set(w.cluster.nodes)
    blocked = w.events("sick-1", "NodeRepairBlocked")
    assert blocked and blocked[0].type == "Warning"
    assert "2 of the 3 nodes of pool default are unhealthy" in blocked[0].message
    assert w.metrics.total(telemetry.NODE_REPAIR_BLOCKED, NodePool="default") >= 2


class _Statuses:
    def __init__(self, statuses: Mapping[str, InstanceStatus]) -> None:
        self.statuses_by_id = dict(statuses)
        self.asked: list[list[str]] = []

    def statuses(self, instance_ids: Iterable[str]) -> Mapping[str, InstanceStatus]:
        ids = list(instance_ids)
        self.asked.append(ids)
        return {i: s for i, s in self.statuses_by_id.items() if i in ids}


def test_a_failed_ec2_status_check_is_read_through_the_port_and_repaired() -> None:
    w = _world("bad", "ok-1", "ok-2")
    impaired = InstanceStatus(system="impaired", impaired_since=START - 11 * 60)
    statuses = _Statuses({"i-bad": impaired})
    w.service.ports = replace(w.service.ports, instance_statuses=statuses)
    w.run(120)
    assert "bad" not in w.cluster.nodes
    assert statuses.asked and "i-bad" in statuses.asked[0]
    assert w.metrics.total(telemetry.NODES_DISRUPTED, Reason="unhealthy") == 1
