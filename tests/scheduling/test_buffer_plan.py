"""CapacityBuffers in the provisioner's plan (`services.buffer_pods.plan_with_buffers`): virtual pods launch
capacity only when free capacity cannot hold them, never keep a real pod pending, and get no Event."""

from __future__ import annotations

from longshore.core.buffers import CapacityBuffer, virtual_pods
from longshore.core.pods import Pod
from longshore.services.buffer_pods import plan_with_buffers
from tests.builders import catalog, instance_type, node, pod, pool, scheduling_input

TYPES = catalog(instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192))


def _virtual(count: int, cpu: str = "1") -> tuple[Pod, ...]:
    return virtual_pods(CapacityBuffer("default", "warm", pod_template="t"), pod("tpl", cpu=cpu), count)


def test_a_buffer_with_no_room_launches_a_node() -> None:
    plan = plan_with_buffers(scheduling_input((), (pool(),), TYPES), _virtual(2))
    assert len(plan.new_claims) == 1 and len(plan.new_claims[0].pods) == 2


def test_a_warm_node_holds_the_buffer_and_nothing_launches() -> None:
    plan = plan_with_buffers(scheduling_input((), (pool(),), TYPES, nodes=(node("warm"),)), _virtual(2))
    assert plan.new_claims == () and plan.unschedulable == ()


def test_the_buffer_is_refilled_when_a_real_pod_takes_the_warm_node() -> None:
    taken = node("warm", pods=(pod("real", cpu="3", node_name="warm"),))
    plan = plan_with_buffers(scheduling_input((), (pool(),), TYPES, nodes=(taken,)), _virtual(2))
    assert len(plan.new_claims) == 1


def test_buffers_never_keep_a_real_pod_pending() -> None:
    # A pool limited to one node's CPU: the real pod must get it, the buffer waits (no Event for it).
    limited = pool(limits={"cpu": "4"})
    plan = plan_with_buffers(
        scheduling_input((pod("real", cpu="3"),), (limited,), TYPES), _virtual(2, cpu="2")
    )
    assert plan.placements().get("default/real") is not None
    assert plan.unschedulable == ()
