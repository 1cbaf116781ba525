"""Instance selection, after kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/instance_selection_test.go` (v1.14.1).

Upstream checks the chosen type is "one of the cheapest" of its fake catalog; here every claim must be priced
at its cheapest offering with no equal-or-larger allowed type cheaper (`cheapest`), and carry the labels the
constraints ask for. Windows variants are left out (Windows offerings are a separate work item).
"""

from __future__ import annotations

from typing import Any

from tests.builders import expr, node_affinity
from tests.conformance.model import CORE, Source
from tests.conformance.scheduling import case as _case
from tests.conformance.scheduling import pod, pods, pool

SRC = Source(CORE, "pkg/controllers/provisioning/scheduling/instance_selection_test.go")
ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"
FAMILY = "karpenter.k8s.aws/instance-family"
Z1, Z2 = "us-east-1a", "us-east-1b"
ALL_CT = expr(CT, "In", "spot", "on-demand")


def req(key: str, op: str, *values: str) -> dict[str, object]:
    return expr(key, op, *values)


def cheapest(
    it: str,
    *,
    pool_reqs: list[dict[str, object]] = (),
    labels: dict[str, Any] | None = None,
    **pod_options: Any,
) -> object:
    expect = {"scheduled": "all", "cheapest": True, "labels": {"p": labels or {}}}
    return _case(
        SRC,
        it,
        pools=[pool(requirements=[ALL_CT, *pool_reqs])],
        pods=[pod("p", cpu="1", **pod_options)],
        expect=expect,
    )


def none(it: str, *, pool_reqs: list[dict[str, object]] = (), **pod_options: Any) -> object:
    return _case(
        SRC,
        it,
        pools=[pool(requirements=[ALL_CT, *pool_reqs])],
        pods=[pod("p", **pod_options)],
        expect={"unschedulable": "all"},
    )


CASES = [
    cheapest("should schedule on one of the cheapest instances"),
    cheapest(
        "should schedule on one of the cheapest instances (pod arch = amd64)",
        node_selector={ARCH: "amd64"},
        labels={ARCH: "amd64"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (pod arch = arm64)",
        node_selector={ARCH: "arm64"},
        labels={ARCH: "arm64"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov arch = amd64)",
        pool_reqs=[req(ARCH, "In", "amd64")],
        labels={ARCH: "amd64"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov arch = arm64)",
        pool_reqs=[req(ARCH, "In", "arm64")],
        labels={ARCH: "arm64"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (pod os = linux)",
        node_selector={OS: "linux"},
        labels={OS: "linux"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov os = linux)",
        pool_reqs=[req(OS, "In", "linux")],
        labels={OS: "linux"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov zone = test-zone-2)",
        pool_reqs=[req(ZONE, "In", Z2)],
        labels={ZONE: Z2},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (pod zone = test-zone-2)",
        node_selector={ZONE: Z2},
        labels={ZONE: Z2},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov ct = spot)",
        pool_reqs=[req(CT, "In", "spot")],
        labels={CT: "spot"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (pod ct = spot)",
        node_selector={CT: "spot"},
        labels={CT: "spot"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)",
        pool_reqs=[req(CT, "In", "on-demand"), req(ZONE, "In", Z1)],
        labels={CT: "on-demand", ZONE: Z1},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)",
        node_selector={CT: "spot", ZONE: Z1},
        labels={CT: "spot", ZONE: Z1},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)",
        pool_reqs=[req(CT, "In", "spot")],
        node_selector={ZONE: Z2},
        labels={CT: "spot", ZONE: Z2},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)",
        pool_reqs=[req(CT, "In", "spot"), req(ZONE, "In", Z2)],
        node_selector={ARCH: "amd64", OS: "linux"},
        labels={CT: "spot", ZONE: Z2, ARCH: "amd64"},
    ),
    cheapest(
        "should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)",
        affinity=node_affinity(
            [req(CT, "In", "spot"), req(ZONE, "In", Z2), req(ARCH, "In", "amd64"), req(OS, "In", "linux")]
        ),
        labels={CT: "spot", ZONE: Z2, ARCH: "amd64"},
    ),
    none(
        "should not schedule if no instance type matches selector (pod arch = arm)",
        pool_reqs=[req(IT, "In", "m5.large", "c5.large")],
        node_selector={ARCH: "arm64"},
    ),
    none(
        "should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)",
        pool_reqs=[req(IT, "In", "m5.large", "m6g.large"), req(ZONE, "In", Z1)],
        node_selector={ARCH: "arm64", ZONE: Z2},
    ),
    none(
        "should not schedule if no instance type matches selector (prov arch = arm / pod zone=test-zone-2)",
        pool_reqs=[req(ARCH, "In", "arm64"), req(ZONE, "In", Z1)],
        node_selector={ZONE: Z2},
    ),
    _case(
        SRC,
        "should schedule on an instance with enough resources",
        pools=[pool(requirements=[ALL_CT])],
        pods=[pod("big", cpu="30", memory="100Gi")],
        expect={"scheduled": "all", "cheapest": True, "types": {"big": "fits-30cpu-100Gi"}},
    ),
    _case(
        SRC,
        "should schedule on cheaper on-demand instance even when spot price ordering would place other instance types first",
        pools=[pool(requirements=[req(CT, "In", "on-demand")])],
        pods=[pod("p", cpu="1")],
        expect={"scheduled": "all", "cheapest": True, "labels": {"p": {CT: "on-demand"}}},
    ),
    # --- MinValues ----------------------------------------------------------------------------------------------
    _case(
        SRC,
        "MinValues: should schedule respecting the minValues from instance-type requirements",
        pools=[
            pool(
                requirements=[
                    {"key": IT, "operator": "In", "values": ["m6g.medium", "m6g.xlarge"], "minValues": 2}
                ]
            )
        ],
        pods=pods("p", 2, cpu="0.9", memory="0.9Gi"),
        expect={"scheduled": "all", "types": {"p-0": "m6g"}},
    ),
    _case(
        SRC,
        "MinValues: schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement",
        pools=[
            pool(
                requirements=[
                    {"key": IT, "operator": "In", "values": ["m5.large", "m5.xlarge"], "minValues": 2}
                ]
            )
        ],
        pods=[pod("p", cpu="3")],
        expect={"unschedulable": "all"},
    ),
    _case(
        SRC,
        "MinValues: should schedule and respect multiple requirement keys with minValues",
        pools=[
            pool(
                requirements=[
                    {"key": FAMILY, "operator": "Exists", "minValues": 3},
                    {"key": IT, "operator": "Exists", "minValues": 10},
                ]
            )
        ],
        pods=[pod("p", cpu="1")],
        expect={"scheduled": "all", "min_distinct": {"p": (FAMILY, 3)}, "types": {"p": "any"}},
    ),
    _case(
        SRC,
        "MinValues: should schedule and respect multiple requirement keys with minValues [instance types]",
        pools=[
            pool(
                requirements=[
                    {"key": FAMILY, "operator": "Exists", "minValues": 3},
                    {"key": IT, "operator": "Exists", "minValues": 10},
                ]
            )
        ],
        pods=[pod("p", cpu="1")],
        expect={"scheduled": "all", "min_distinct": {"p": (IT, 10)}},
    ),
]
