"""`vpc.amazonaws.com/efa`: offered only by types that support EFA, with the count Karpenter uses (the type's
`EfaInfo.MaximumEfaInterfaces`, or the node class's efa-only interfaces when it lists `networkInterfaces`;
aws `pkg/providers/instancetype/types.go` `efas`); a node class's efa-only interfaces rule out types with fewer
EFAs (`compatibility.go` case 5); a claim whose pods request EFA launches with the type's EFA count as
interfaces (`amifamily/resolver.go` `efaCount`), one that does not with none."""

from __future__ import annotations

from longshore.core.allocatable import fits_network_interfaces, node_capacity
from longshore.core.model import NetworkInterface
from longshore.core.scheduling import solve
from longshore.services.launch_requests import launch_request
from tests.builders import catalog, instance_type, node_class, pod, pool, scheduling_input
from tests.planner.fakes import cluster_config

EFA = "vpc.amazonaws.com/efa"
EFA_ONLY = (
    NetworkInterface(0, 0, "interface"),
    NetworkInterface(0, 1, "efa-only"),
    NetworkInterface(1, 0, "efa-only"),
)


def _catalog():
    return catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096),
        instance_type("c5n.9xlarge", vcpus=36, memory_gib=96, price=1.944, extended={EFA: 1}),
        instance_type("p5.48xlarge", vcpus=192, memory_gib=2048, price=98.32, extended={EFA: 32}),
    )


def test_efa_capacity_is_the_types_unless_the_node_class_lists_interfaces() -> None:
    types = {it.name: it for it in _catalog()}
    assert [node_capacity(types[n]).get(EFA) for n in ("m5.large", "c5n.9xlarge", "p5.48xlarge")] == [
        0,
        1,
        32,
    ]
    listed = node_class(network_interfaces=EFA_ONLY)
    assert node_capacity(types["p5.48xlarge"], node_class=listed).get(EFA) == 2
    assert not fits_network_interfaces(types["m5.large"], listed)
    assert not fits_network_interfaces(types["c5n.9xlarge"], listed), "two efa-only interfaces, one EFA"
    assert fits_network_interfaces(types["p5.48xlarge"], listed)
    assert fits_network_interfaces(types["m5.large"], node_class())


def test_a_pod_requesting_efa_lands_on_an_efa_type_and_launches_with_its_interfaces() -> None:
    the_pool = pool()
    pods = [pod("mpi", cpu="1", extra_requests={EFA: "1"}), pod("web", cpu="1")]
    plan = solve(scheduling_input(pods, [the_pool], _catalog()))
    assert not plan.unschedulable
    by_pod = {key: claim for claim in plan.new_claims for key in claim.pods}
    assert by_pod["default/mpi"].instance_type == "c5n.9xlarge"
    request = launch_request(by_pod["default/mpi"], _catalog(), cluster_config(the_pool), now=0.0)
    assert {o.instance_type: o.efa for o in request.options} == {"c5n.9xlarge": 1, "p5.48xlarge": 32}
    if by_pod["default/web"] is not by_pod["default/mpi"]:
        plain = launch_request(by_pod["default/web"], _catalog(), cluster_config(the_pool), now=0.0)
        assert all(o.efa == 0 for o in plain.options)


def test_node_class_efa_only_interfaces_leave_only_types_with_enough_efas() -> None:
    the_pool = pool()
    listed = node_class(network_interfaces=EFA_ONLY)
    plan = solve(scheduling_input([pod("p", cpu="1")], [the_pool], _catalog(), node_classes=(listed,)))
    assert not plan.unschedulable
    (claim,) = plan.new_claims
    assert claim.instance_types == ("p5.48xlarge",)
