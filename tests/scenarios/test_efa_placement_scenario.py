"""Issue #17 on the simulated cluster: EFA pods on a placement-group pool (`efa-placement-group`).

Two pods asking for `vpc.amazonaws.com/efa` run on c5n nodes whose launch template attaches one `efa`
interface per EFA of the type (with `ipPrefixCount`'s prefix) and places them in the group `hpc`; the simulated
kubelet advertises only the EFA devices the template attached, so the pods run only if the template has them.
Zero rule violations.
"""

from __future__ import annotations

import pytest

from longshore.core import labels as wk
from tests.scenarios.test_disruption_scenarios import assert_clean, run

pytestmark = pytest.mark.slow


def test_efa_pods_run_on_nodes_launched_with_efa_interfaces_into_the_placement_group() -> None:
    runner, summary = run("efa-placement-group")
    assert_clean(summary)
    world = runner.world
    (group,) = world.placement_groups._groups.values()
    nodes = world.cluster.store.view("nodes")
    assert nodes and all(n["metadata"]["labels"][wk.PLACEMENT_GROUP_ID] == group.group_id for n in nodes)
    assert all(int(n["status"]["capacity"]["vpc.amazonaws.com/efa"]) >= 1 for n in nodes)
    pods = world.cluster.store.view("pods")
    assert len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods)
    booted = [
        world.cluster.kubelet.booted_templates[n["spec"]["providerID"].rsplit("/", 1)[1]] for n in nodes
    ]
    for template in booted:
        assert template["Placement"] == {"GroupId": group.group_id}
        interfaces = template["NetworkInterfaces"]
        assert interfaces and all(
            n["InterfaceType"] == "efa" and n["Ipv4PrefixCount"] == 1 for n in interfaces
        )
