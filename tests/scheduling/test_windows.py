"""Windows pools end to end in the engine: Windows node classes see amd64 types labelled windows with their build,
priced with the licence; pods that select Windows land there and nowhere else."""

from __future__ import annotations

import pytest

from longshore.core import labels as wk
from longshore.core.catalog import PRIVATE_IPV4, WINDOWS_BUILDS, WINDOWS_LICENSE_PER_VCPU_HOUR
from longshore.core.scheduling import solve
from tests.builders import node_class, pod, pool, real_catalog, req, scheduling_input

CATALOG = real_catalog("us-east-1", ("m5.large", "m5.xlarge", "m6g.large", "c5.large", "t3.medium"))
ON_DEMAND = req(wk.CAPACITY_TYPE, "In", "on-demand")


@pytest.mark.parametrize("family", sorted(WINDOWS_BUILDS))
def test_a_windows_class_sees_amd64_types_as_windows_with_the_licence_price(family: str) -> None:
    linux, windows = CATALOG["m5.large"], CATALOG.for_family(family)["m5.large"]
    assert windows.label(wk.OS) == "windows" and windows.label(wk.WINDOWS_BUILD) == WINDOWS_BUILDS[family]
    assert "m6g.large" not in CATALOG.for_family(family)  # Graviton runs no Windows
    surcharge = WINDOWS_LICENSE_PER_VCPU_HOUR * 2
    for before, after in zip(linux.offerings, windows.offerings, strict=True):
        assert after.price == pytest.approx(before.price + surcharge)
    assert windows.capacity.get(PRIVATE_IPV4) == linux.ipv4_per_eni - 1  # m5.large: 10 per ENI
    assert CATALOG.for_family("AL2023") is CATALOG


def test_windows_pods_land_in_the_windows_pool_and_linux_pods_in_the_linux_pool() -> None:
    pools = (
        pool("linux", requirements=(ON_DEMAND,), node_class_name="al2023"),
        pool("windows", requirements=(ON_DEMAND,), node_class_name="win"),
    )
    classes = (node_class("al2023", ami_family="AL2023"), node_class("win", ami_family="Windows2022"))
    pods = (
        pod("iis", cpu="1", node_selector={wk.OS: "windows"}, extra_requests={PRIVATE_IPV4: "1"}),
        pod("nginx", cpu="1", node_selector={wk.OS: "linux"}),
    )
    plan = solve(scheduling_input(pods, pools, CATALOG, node_classes=classes))
    assert plan.unschedulable == ()
    by_pod = {p: c for c in plan.new_claims for p in c.pods}
    windows, linux = by_pod["default/iis"], by_pod["default/nginx"]
    assert windows.nodepool == "windows" and dict(windows.labels).get(wk.OS, "windows") == "windows"
    assert linux.nodepool == "linux"
    assert windows.price_per_hour > CATALOG[windows.instance_type].cheapest_price(windows_requirements())


def windows_requirements():  # type: ignore[no-untyped-def]
    from longshore.core.requirements import Requirements

    return Requirements.of((ON_DEMAND,))


def test_a_windows_pod_with_no_windows_pool_says_why() -> None:
    plan = solve(
        scheduling_input(
            (pod("iis", cpu="1", node_selector={wk.OS: "windows"}),),
            (pool("linux", requirements=(ON_DEMAND,), node_class_name="al2023"),),
            CATALOG,
            node_classes=(node_class("al2023", ami_family="AL2023"),),
        )
    )
    ((key, reason),) = plan.unschedulable
    assert key == "default/iis" and "kubernetes.io/os" in reason
