"""Topology spread and pod (anti-)affinity, after kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/topology_test.go` (v1.14.1).

Upstream's pool requires `karpenter.sh/capacity-type Exists`; its fake provider has three zones, so the
zonal cases here restrict the pool to us-east-1a/b/c (`THREE`) to keep upstream's counts. Tests that
provision in several rounds become one round against existing nodes carrying the earlier rounds' pods.
"""

from __future__ import annotations

from typing import Any

from tests.builders import expr, node_affinity
from tests.conformance.model import CORE, Source
from tests.conformance.scheduling import case as _case
from tests.conformance.scheduling import node, pod, pods
from tests.conformance.scheduling import pool as _pool

SRC = Source(CORE, "pkg/controllers/provisioning/scheduling/topology_test.go")
Z1, Z2, Z3 = "us-east-1a", "us-east-1b", "us-east-1c"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
LABELS = {"test": "test"}
SEL = "test=test"
OK = {"scheduled": "all"}


def req(key: str, op: str, *values: str) -> dict[str, object]:
    return expr(key, op, *values)


def pool(name: str = "default", **spec: Any) -> dict[str, object]:
    extra = list(spec.pop("requirements", []))
    return _pool(name, requirements=[req(CT, "Exists"), *extra], **spec)


THREE = [pool(requirements=[req(ZONE, "In", Z1, Z2, Z3)])]


def case(it: str, *, pools: list[dict[str, object]] | None = None, **data: Any) -> object:
    return _case(SRC, it, pools=pools if pools is not None else [pool()], **data)


def spread(
    key: str = ZONE, skew: int = 1, *, selector: dict[str, Any] | None = None, **more: Any
) -> dict[str, Any]:
    item: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}
    if selector is not None:
        item["labelSelector"] = selector
    item.update(more)
    return item


MATCH = {"matchLabels": LABELS}


def spreading(prefix: str, count: int, *constraints: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    options.setdefault("labels", LABELS)
    return pods(prefix, count, spread=list(constraints), **options)


def bound(name: str, node_name: str, **options: Any) -> dict[str, Any]:
    options.setdefault("labels", LABELS)
    return pod(name, node_name=node_name, **options)


def zonal_node(name: str, zone: str, *pod_names: str, **options: Any) -> dict[str, Any]:
    """A node in `zone` running `pod_names` (labelled test=test) and full: upstream's earlier rounds."""
    options.setdefault(
        "allocatable", {"cpu": f"{1.1 * len(pod_names) + 0.05:.2f}", "memory": "8Gi", "pods": "110"}
    )
    return node(name, zone=zone, pods=[bound(p, name, cpu="1.1") for p in pod_names], **options)


def affinity(
    kind: str, key: str, labels: dict[str, str], *, preferred: bool = False, **term: Any
) -> dict[str, Any]:
    body = {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **term}
    if preferred:
        return {
            kind: {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": body}]
            }
        }
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [body]}}


CASES = [
    case(
        "should ignore unknown topology keys",
        pods=[pod("spread", labels=LABELS, spread=[spread("unknown", selector=MATCH)]), pod("plain")],
        expect={"scheduled": ["plain"], "unschedulable": ["spread"]},
    ),
    case(
        "should not spread when a nil label selector is defined",
        pools=THREE,
        pods=spreading("p", 2, spread()),
        expect={**OK, "counts": [(ZONE, SEL, [2])]},
    ),
    # --- Zonal ----------------------------------------------------------------------------------------------
    case(
        "Zonal: should balance pods across zones (match labels)",
        pools=THREE,
        pods=spreading("p", 4, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [1, 1, 2])]},
    ),
    case(
        "Zonal: should balance pods across zones (match expressions)",
        pools=THREE,
        pods=spreading(
            "p",
            4,
            spread(selector={"matchExpressions": [{"key": "test", "operator": "In", "values": ["test"]}]}),
        ),
        expect={**OK, "counts": [(ZONE, SEL, [1, 1, 2])]},
    ),
    case(
        "Zonal: should respect NodePool zonal constraints",
        pools=THREE,
        pods=spreading("p", 4, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [1, 1, 2])]},
    ),
    case(
        "Zonal: should respect NodePool zonal constraints (subset) with requirements",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2)])],
        pods=spreading("p", 4, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [2, 2])]},
    ),
    case(
        "Zonal: should respect NodePool zonal constraints (subset) with labels",
        pools=[pool(labels={ZONE: Z1})],
        pods=spreading("p", 4, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [4])]},
    ),
    case(
        "Zonal: should respect NodePool zonal constraints (subset) with requirements and labels",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2)], labels={ZONE: Z1})],
        pods=spreading("p", 4, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [4])]},
    ),
    case(
        "Zonal: should respect NodePool zonal constraints (subset) with labels across NodePools",
        pools=[
            pool(requirements=[req(ZONE, "In", Z1, Z2)], labels={ZONE: Z1}),
            pool("second", labels={ZONE: Z2}),
        ],
        pods=spreading("p", 4, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [2, 2])]},
    ),
    case(
        "Zonal: should respect NodePool zonal constraints (existing pod)",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2)])],
        nodes=[zonal_node("old", Z3, "old-0")],
        pods=spreading("p", 6, spread(selector=MATCH), cpu="1.1"),
        expect={"counts": [(ZONE, SEL, [1, 2, 2])]},
    ),
    case(
        "Zonal: should schedule to the non-minimum domain if its all that's available",
        pools=[pool(requirements=[req(ZONE, "In", Z3)])],
        nodes=[zonal_node("n1", Z1, "old-1"), zonal_node("n2", Z2, "old-2")],
        pods=spreading("p", 10, spread(skew=5, selector=MATCH), cpu="1.1"),
        expect={"counts": [(ZONE, SEL, [1, 1, 6])]},
    ),
    case(
        "Zonal: should only schedule to minimum domains if already violating max skew",
        pools=THREE,
        nodes=[zonal_node("n1", Z1, "old-0", "old-1", "old-2")],
        pods=spreading("p", 3, spread(selector=MATCH), cpu="1.1"),
        expect={**OK, "counts": [(ZONE, SEL, [3, 1, 2])]},
    ),
    case(
        "Zonal: should not violate max-skew when unsat = do not schedule",
        pools=[pool(requirements=[req(ZONE, "In", Z2, Z3)])],
        nodes=[zonal_node("n1", Z1, "old-0")],
        pods=spreading("p", 10, spread(selector=MATCH), cpu="1.1"),
        expect={"counts": [(ZONE, SEL, [1, 2, 2])]},
    ),
    case(
        "Zonal: should not violate max-skew when unsat = do not schedule (discover domains)",
        pools=[pool(requirements=[req(ZONE, "In", Z2, Z3)])],
        nodes=[
            node(
                "n1",
                zone=Z1,
                allocatable={"cpu": "1.2", "memory": "8Gi", "pods": "110"},
                pods=[bound("old-0", "n1", cpu="1.1")],
            )
        ],
        pods=spreading("p", 10, spread(selector=MATCH), cpu="1.1"),
        expect={"counts": [(ZONE, SEL, [1, 2, 2])]},
    ),
    case(
        "Zonal: should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain",
        pools=THREE,
        nodes=[
            node(
                "first",
                zone=Z1,
                pods=[
                    pod("unlabelled", node_name="first"),
                    bound("a", "first"),
                    bound("b", "first"),
                    bound("other-ns", "first", namespace="elsewhere"),
                ],
            ),
            node("second", zone=Z2, pods=[bound("c", "second")]),
        ],
        pods=spreading("p", 2, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [2, 2, 1])]},
    ),
    case(
        "Zonal: should match all pods when labelSelector is not specified",
        pools=THREE,
        pods=[pod("p", spread=[spread()])],
        expect={**OK, "counts": [(ZONE, ["p"], [1])]},
    ),
    case(
        "Zonal: should handle interdependent selectors",
        # on upstream's fake default-instance-type (m5.large here); the cheapest real types hold 4 pods
        pools=[pool(requirements=[req("node.kubernetes.io/instance-type", "In", "m5.large")])],
        pods=pods("p", 5, labels={}, spread=[spread(HOST, selector=MATCH)]),
        expect={**OK, "same_node": [[f"p-{i}" for i in range(5)]]},
    ),
    case(
        "Zonal: should respect minDomains constraints",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2)])],
        pods=spreading("p", 3, spread(selector=MATCH, minDomains=3)),
        expect={"counts": [(ZONE, SEL, [1, 1])]},
    ),
    case(
        "Zonal: satisfied minDomains constraints (equal) should allow expected pod scheduling",
        pools=THREE,
        pods=spreading("p", 11, spread(selector=MATCH, minDomains=3)),
        expect={**OK, "counts": [(ZONE, SEL, [4, 4, 3])]},
    ),
    case(
        "Zonal: satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling",
        pools=THREE,
        pods=spreading("p", 11, spread(selector=MATCH, minDomains=2)),
        expect={**OK, "counts": [(ZONE, SEL, [4, 4, 3])]},
    ),
    # --- Hostname ---------------------------------------------------------------------------------------------
    case(
        "Hostname: should balance pods across nodes",
        pods=spreading("p", 4, spread(HOST, selector=MATCH)),
        expect={**OK, "counts": [(HOST, SEL, [1, 1, 1, 1])]},
    ),
    case(
        "Hostname: should balance pods on the same hostname up to maxskew",
        pods=spreading("p", 4, spread(HOST, skew=4, selector=MATCH)),
        expect={**OK, "counts": [(HOST, SEL, [4])]},
    ),
    case(
        "Hostname: balance multiple deployments with hostname topology spread",
        pods=[
            *pods("app1", 2, spread=[spread(HOST, selector={"matchLabels": {"app": "app1"}})]),
            *pods("app2", 2, spread=[spread(HOST, selector={"matchLabels": {"app": "app2"}})]),
        ],
        expect={**OK, "claims": 2},
    ),
    case(
        "Hostname: balance multiple deployments with hostname topology spread & varying arch",
        pools=[pool(requirements=[req(ARCH, "In", "amd64", "arm64")])],
        pods=[
            *pods(
                "app1",
                2,
                node_selector={ARCH: "amd64"},
                spread=[spread(HOST, selector={"matchLabels": {"app": "app1"}})],
            ),
            *pods(
                "app2",
                2,
                node_selector={ARCH: "arm64"},
                spread=[spread(HOST, selector={"matchLabels": {"app": "app2"}})],
            ),
        ],
        expect={**OK, "claims": 4},
    ),
    # --- CapacityType -----------------------------------------------------------------------------------------
    case(
        "CapacityType: should balance pods across capacity types",
        pods=spreading("p", 4, spread(CT, selector=MATCH)),
        expect={**OK, "counts": [(CT, SEL, [2, 2])]},
    ),
    case(
        "CapacityType: should respect NodePool capacity type constraints",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand")])],
        pods=spreading("p", 4, spread(CT, selector=MATCH)),
        expect={**OK, "counts": [(CT, SEL, [2, 2])]},
    ),
    case(
        "CapacityType: should not violate max-skew when unsat = do not schedule (capacity type)",
        pools=[_pool(requirements=[req(CT, "In", "on-demand")])],
        nodes=[
            node(
                "spot",
                labels={CT: "spot"},
                allocatable={"cpu": "1.2", "memory": "8Gi", "pods": "110"},
                pods=[bound("old", "spot", cpu="1.1")],
            )
        ],
        pods=spreading("p", 5, spread(CT, selector=MATCH), cpu="1.1"),
        expect={"counts": [(CT, SEL, [1, 2])]},
    ),
    case(
        "CapacityType: should violate max-skew when unsat = schedule anyway (capacity type)",
        pools=[_pool(requirements=[req(CT, "In", "on-demand")])],
        nodes=[
            node(
                "spot",
                labels={CT: "spot"},
                allocatable={"cpu": "1.2", "memory": "8Gi", "pods": "110"},
                pods=[bound("old", "spot", cpu="1.1")],
            )
        ],
        pods=spreading("p", 5, spread(CT, selector=MATCH, whenUnsatisfiable="ScheduleAnyway"), cpu="1.1"),
        expect={**OK, "counts": [(CT, SEL, [1, 5])]},
    ),
    case(
        "CapacityType: should match all pods when labelSelector is not specified",
        pods=[pod("p", spread=[spread(CT)])],
        expect={**OK, "counts": [(CT, ["p"], [1])]},
    ),
    case(
        "CapacityType: should handle interdependent selectors",
        pods=pods("p", 5, labels={}, spread=[spread(CT, selector=MATCH)]),
        expect=OK,
    ),
    case(
        "CapacityType: should balance pods across capacity-types (node required affinity constrained)",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand")])],
        pods=spreading(
            "p", 4, spread(CT, selector=MATCH), affinity=node_affinity([req(CT, "In", "spot", "on-demand")])
        ),
        expect={**OK, "counts": [(CT, SEL, [2, 2])]},
    ),
    case(
        "CapacityType: should balance pods across capacity-types (no constraints)",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand")])],
        pods=spreading("p", 6, spread(CT, selector=MATCH)),
        expect={**OK, "counts": [(CT, SEL, [3, 3])]},
    ),
    case(
        "CapacityType: should balance pods across arch (no constraints)",
        pools=[pool(requirements=[req(ARCH, "In", "amd64", "arm64")])],
        pods=spreading("p", 4, spread(ARCH, selector=MATCH)),
        expect={**OK, "counts": [(ARCH, SEL, [2, 2])]},
    ),
    # --- Combined -----------------------------------------------------------------------------------------------
    case(
        "Combined Hostname and Zonal Topology: should spread pods while respecting both constraints (hostname and zonal)",
        pools=THREE,
        pods=spreading("p", 6, spread(skew=1, selector=MATCH), spread(HOST, skew=3, selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [2, 2, 2])], "skew": [(HOST, [f"p-{i}" for i in range(6)], 3)]},
    ),
    case(
        "Combined Hostname and Zonal Topology: should balance pods across NodePool requirements",
        pools=[
            pool("spot", requirements=[req(ZONE, "In", Z1, Z2)]),
            pool("ondemand", requirements=[req(ZONE, "In", Z3)]),
        ],
        pods=spreading("p", 9, spread(selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [3, 3, 3])]},
    ),
    case(
        "Combined Zonal and Capacity Type Topology: should spread pods while respecting both constraints",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand"), req(ZONE, "In", Z1, Z2, Z3)])],
        pods=spreading("p", 6, spread(selector=MATCH), spread(CT, selector=MATCH)),
        expect={**OK, "counts": [(ZONE, SEL, [2, 2, 2]), (CT, SEL, [3, 3])]},
    ),
    case(
        "Combined Hostname, Zonal, and Capacity Type Topology: should spread pods while respecting all constraints",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand"), req(ZONE, "In", Z1, Z2, Z3)])],
        pods=spreading(
            "p", 6, spread(selector=MATCH), spread(CT, selector=MATCH), spread(HOST, skew=3, selector=MATCH)
        ),
        expect={
            **OK,
            "counts": [(ZONE, SEL, [2, 2, 2]), (CT, SEL, [3, 3])],
            "skew": [(HOST, [f"p-{i}" for i in range(6)], 3)],
        },
    ),
    # --- MatchLabelKeys -----------------------------------------------------------------------------------------
    case(
        "MatchLabelKeys: should support matchLabelKeys",
        pools=THREE,
        nodes=[zonal_node("n1", Z1, *[f"old-{i}" for i in range(3)])],
        pods=pods(
            "p",
            3,
            labels={**LABELS, "pod-template-hash": "new"},
            spread=[spread(selector=MATCH, matchLabelKeys=["pod-template-hash"])],
        ),
        # the bound pods carry no pod-template-hash, so only the new generation counts: one per zone
        expect={**OK, "domains": [(ZONE, ["p-0", "p-1", "p-2"], 3)]},
    ),
    case(
        "MatchLabelKeys: should ignore unknown labels specified in matchLabelKeys",
        pools=THREE,
        pods=spreading("p", 3, spread(selector=MATCH, matchLabelKeys=["unknown-label"])),
        expect={**OK, "counts": [(ZONE, SEL, [1, 1, 1])]},
    ),
    # --- NodeTaintsPolicy / NodeAffinityPolicy ----------------------------------------------------------------
    case(
        "NodeTaintsPolicy: should balance pods across a label (NodeTaintsPolicy=honor)",
        pools=[
            pool(
                "tainted",
                labels={"capacity.spread": "tainted"},
                taints=[{"key": "taint", "value": "v", "effect": "NoSchedule"}],
            ),
            pool("a", labels={"capacity.spread": "a"}),
            pool("b", labels={"capacity.spread": "b"}),
        ],
        pods=spreading("p", 4, spread("capacity.spread", selector=MATCH, nodeTaintsPolicy="Honor")),
        expect={**OK, "counts": [("capacity.spread", SEL, [2, 2])]},
    ),
    case(
        "NodeTaintsPolicy: should balance pods across a label (NodeTaintsPolicy=ignore)",
        pools=[
            pool(
                "tainted",
                labels={"capacity.spread": "tainted"},
                taints=[{"key": "taint", "value": "v", "effect": "NoSchedule"}],
            ),
            pool("a", labels={"capacity.spread": "a"}),
            pool("b", labels={"capacity.spread": "b"}),
        ],
        pods=spreading("p", 4, spread("capacity.spread", selector=MATCH, nodeTaintsPolicy="Ignore")),
        # the tainted domain counts (and stays empty), so only maxSkew pods per reachable domain: 1 + 1
        expect={"counts": [("capacity.spread", SEL, [1, 1])]},
    ),
    case(
        "NodeAffinityPolicy: should balance pods across a label (NodeAffinityPolicy=honor)",
        pools=[
            pool("a", labels={"capacity.spread": "a"}),
            pool("b", labels={"capacity.spread": "b"}),
            pool("c", labels={"capacity.spread": "c"}),
        ],
        pods=spreading(
            "p",
            4,
            spread("capacity.spread", selector=MATCH, nodeAffinityPolicy="Honor"),
            affinity=node_affinity([req("capacity.spread", "In", "a", "b")]),
        ),
        expect={**OK, "counts": [("capacity.spread", SEL, [2, 2])]},
    ),
    case(
        "NodeAffinityPolicy: should balance pods across a label (NodeAffinityPolicy=ignore)",
        pools=[
            pool("a", labels={"capacity.spread": "a"}),
            pool("b", labels={"capacity.spread": "b"}),
            pool("c", labels={"capacity.spread": "c"}),
        ],
        pods=spreading(
            "p",
            4,
            spread("capacity.spread", selector=MATCH, nodeAffinityPolicy="Ignore"),
            affinity=node_affinity([req("capacity.spread", "In", "a", "b")]),
        ),
        # domain c counts although the pods cannot go there: at most one pod each in a and b
        expect={"counts": [("capacity.spread", SEL, [1, 1])]},
    ),
    # --- Zonal topology and node affinity ---------------------------------------------------------------------
    case(
        "Combined Zonal Topology and Node Affinity: should limit spread options by nodeSelector",
        pools=THREE,
        pods=[
            *spreading("z1", 5, spread(selector=MATCH), node_selector={ZONE: Z1}),
            *spreading("z2", 10, spread(selector=MATCH), node_selector={ZONE: Z2}),
        ],
        expect={**OK, "counts": [(ZONE, SEL, [5, 10])]},
    ),
    case(
        "Combined Zonal Topology and Node Affinity: should limit spread options by node requirements",
        pools=THREE,
        pods=spreading("p", 10, spread(selector=MATCH), affinity=node_affinity([req(ZONE, "In", Z1, Z2)])),
        expect={**OK, "counts": [(ZONE, SEL, [5, 5])]},
    ),
    case(
        "Combined Zonal Topology and Node Affinity: should not limit spread options by preferred node affinity",
        pools=THREE,
        pods=spreading(
            "p",
            6,
            spread(selector=MATCH),
            affinity=node_affinity(preferred=[(10, [req(ZONE, "In", Z1, Z2)])]),
        ),
        expect={**OK, "counts": [(ZONE, SEL, [2, 2, 2])]},
    ),
    case(
        "Combined Capacity Type Topology and Node Affinity: should limit spread options by nodeSelector",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand")])],
        pods=[
            *spreading("spot", 5, spread(CT, selector=MATCH), node_selector={CT: "spot"}),
            *spreading("od", 5, spread(CT, selector=MATCH), node_selector={CT: "on-demand"}),
        ],
        expect={**OK, "counts": [(CT, SEL, [5, 5])]},
    ),
    case(
        "Combined Capacity Type Topology and Node Affinity: should limit spread options by node affinity (capacity type)",
        pools=[_pool(requirements=[req(CT, "In", "spot", "on-demand")])],
        pods=spreading("p", 3, spread(CT, selector=MATCH), affinity=node_affinity([req(CT, "In", "spot")])),
        expect={**OK, "counts": [(CT, SEL, [3])]},
    ),
    # --- Pod Affinity/Anti-Affinity -----------------------------------------------------------------------------
    case(
        "Pod Affinity/Anti-Affinity: should schedule a pod with empty pod affinity and anti-affinity",
        pods=[pod("p", affinity={"podAffinity": {}, "podAntiAffinity": {}})],
        expect=OK,
    ),
    case(
        "Pod Affinity/Anti-Affinity: should respect pod affinity (hostname)",
        nodes=[node("n1", pods=[pod("target", labels={"security": "s2"}, node_name="n1")])],
        pods=[pod("follower", affinity=affinity("podAffinity", HOST, {"security": "s2"}))],
        expect={**OK, "on_node": {"follower": "n1"}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should respect pod affinity (arch)",
        pools=[pool(requirements=[req(ARCH, "In", "amd64", "arm64")])],
        pods=[
            pod("target", labels={"security": "s2"}, node_selector={ARCH: "arm64"}),
            pod("follower", affinity=affinity("podAffinity", ARCH, {"security": "s2"})),
        ],
        expect={**OK, "labels": {"target": {ARCH: "arm64"}, "follower": {ARCH: "arm64"}}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should respect self pod affinity (hostname)",
        pods=pods(
            "p", 3, labels={"security": "s2"}, affinity=affinity("podAffinity", HOST, {"security": "s2"})
        ),
        expect={**OK, "same_node": [["p-0", "p-1", "p-2"]]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should respect self pod affinity for first empty topology domain only (hostname)",
        pods=pods(
            "p",
            10,
            labels={"security": "s2"},
            cpu="1",
            affinity=affinity("podAffinity", HOST, {"security": "s2"}),
        ),
        expect={"claims": 1},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should respect self pod affinity (zone)",
        pods=pods(
            "p", 3, labels={"security": "s2"}, affinity=affinity("podAffinity", ZONE, {"security": "s2"})
        ),
        expect={**OK, "domains": [(ZONE, ["p-0", "p-1", "p-2"], 1)]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should respect self pod affinity (zone w/ constraint)",
        pods=pods(
            "p",
            3,
            labels={"security": "s2"},
            node_selector={ZONE: Z3},
            affinity=affinity("podAffinity", ZONE, {"security": "s2"}),
        ),
        expect={**OK, "labels": {f"p-{i}": {ZONE: Z3} for i in range(3)}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should allow violation of preferred pod affinity",
        pods=[pod("p", affinity=affinity("podAffinity", HOST, {"security": "s2"}, preferred=True))],
        expect=OK,
    ),
    case(
        "Pod Affinity/Anti-Affinity: should allow violation of preferred pod anti-affinity",
        pods=pods(
            "p",
            3,
            labels={"security": "s2"},
            affinity=affinity("podAntiAffinity", ZONE, {"security": "s2"}, preferred=True),
        ),
        expect=OK,
    ),
    case(
        "Pod Affinity/Anti-Affinity: should separate nodes using simple pod anti-affinity on hostname",
        pods=pods(
            "p", 2, labels={"security": "s2"}, affinity=affinity("podAntiAffinity", HOST, {"security": "s2"})
        ),
        expect={**OK, "different_nodes": [["p-0", "p-1"]]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should not violate pod anti-affinity on zone",
        pools=THREE,
        # upstream's zone pods request 2 cpu, so Karpenter's queue (cpu, then memory, descending) places them
        # before the anti-affine pod; in the other order the anti-affine pod would take every zone it may use
        pods=[
            pod("z1", cpu="2", labels={"security": "s2"}, node_selector={ZONE: Z1}),
            pod("z2", cpu="2", labels={"security": "s2"}, node_selector={ZONE: Z2}),
            pod("z3", cpu="2", labels={"security": "s2"}, node_selector={ZONE: Z3}),
            pod("anti", affinity=affinity("podAntiAffinity", ZONE, {"security": "s2"})),
        ],
        expect={"scheduled": ["z1", "z2", "z3"], "unschedulable": ["anti"]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should not violate pod anti-affinity on zone (other schedules first)",
        pools=THREE,
        nodes=[zonal_node("n1", Z1, "old")],
        pods=[pod("anti", affinity=affinity("podAntiAffinity", ZONE, {"test": "test"}))],
        expect={**OK, "not_labels": {"anti": {ZONE: [Z1]}}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should not violate pod anti-affinity (arch)",
        pools=[pool(requirements=[req(ARCH, "In", "amd64", "arm64")])],
        nodes=[
            node(
                "arm",
                labels={ARCH: "arm64"},
                pods=[pod("target", labels={"security": "s2"}, node_name="arm")],
            )
        ],
        pods=[pod("anti", affinity=affinity("podAntiAffinity", ARCH, {"security": "s2"}))],
        expect={**OK, "labels": {"anti": {ARCH: "amd64"}}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should not violate pod anti-affinity on zone (inverse)",
        pools=THREE,
        nodes=[
            node(
                "n1",
                zone=Z1,
                pods=[
                    pod(
                        "guard",
                        node_name="n1",
                        affinity=affinity("podAntiAffinity", ZONE, {"security": "s2"}),
                    )
                ],
            )
        ],
        pods=[pod("p", labels={"security": "s2"})],
        expect={**OK, "not_labels": {"p": {ZONE: [Z1]}}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should not violate pod anti-affinity on zone (inverse w/existing nodes)",
        pools=THREE,
        nodes=[
            node(
                "n1",
                zone=Z1,
                allocatable={"cpu": "16", "memory": "64Gi", "pods": "110"},
                pods=[
                    pod(
                        "guard",
                        node_name="n1",
                        affinity=affinity("podAntiAffinity", ZONE, {"security": "s2"}),
                    )
                ],
            )
        ],
        pods=[pod("p", labels={"security": "s2"}, node_selector={ZONE: Z1})],
        expect={"unschedulable": ["p"]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should violate preferred pod anti-affinity on zone (inverse w/existing nodes)",
        pools=THREE,
        nodes=[
            node(
                "n1",
                zone=Z1,
                allocatable={"cpu": "16", "memory": "64Gi", "pods": "110"},
                pods=[
                    pod(
                        "guard",
                        node_name="n1",
                        affinity=affinity("podAntiAffinity", ZONE, {"security": "s2"}, preferred=True),
                    )
                ],
            )
        ],
        pods=[pod("p", labels={"security": "s2"}, node_selector={ZONE: Z1})],
        expect={**OK, "labels": {"p": {ZONE: Z1}}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should allow violation of a pod affinity preference with a conflicting required constraint",
        pods=pods(
            "p",
            3,
            labels={"security": "s2"},
            affinity={
                **affinity("podAntiAffinity", HOST, {"security": "s2"}),
                **affinity("podAffinity", HOST, {"security": "s2"}, preferred=True),
            },
        ),
        expect={**OK, "claims": 3},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should support pod anti-affinity with a zone topology",
        pools=THREE,
        pods=pods(
            "p", 4, labels={"security": "s2"}, affinity=affinity("podAntiAffinity", ZONE, {"security": "s2"})
        ),
        expect={"domains": [(ZONE, [f"p-{i}" for i in range(4)], 3)], "scheduled": ["p-0", "p-1", "p-2"]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should not schedule pods with affinity to a non-existent pod",
        pods=[pod("p", affinity=affinity("podAffinity", ZONE, {"security": "s2"}))],
        expect={"unschedulable": "all"},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should support pod affinity with zone topology (unconstrained target)",
        pods=[
            pod("target", labels={"security": "s2"}),
            *pods("follower", 3, affinity=affinity("podAffinity", ZONE, {"security": "s2"})),
        ],
        expect={**OK, "domains": [(ZONE, ["target", "follower-0", "follower-1", "follower-2"], 1)]},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should support pod affinity with zone topology (constrained target)",
        pods=[
            pod("target", labels={"security": "s2"}, node_selector={ZONE: Z1}),
            *pods("follower", 3, affinity=affinity("podAffinity", ZONE, {"security": "s2"})),
        ],
        expect={
            **OK,
            "labels": {n: {ZONE: Z1} for n in ("target", "follower-0", "follower-1", "follower-2")},
        },
    ),
    case(
        "Pod Affinity/Anti-Affinity: should fail to schedule pods with unsatisfiable dependencies",
        pods=[pod("p", labels={"app": "a"}, affinity=affinity("podAffinity", HOST, {"app": "b"}))],
        expect={"unschedulable": "all"},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should filter pod affinity topologies by namespace, no matching pods",
        nodes=[
            node("n1", pods=[pod("target", labels={"security": "s2"}, namespace="other", node_name="n1")])
        ],
        pods=[pod("p", affinity=affinity("podAffinity", HOST, {"security": "s2"}))],
        expect={"unschedulable": "all"},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should filter pod affinity topologies by namespace, matching pods namespace list",
        nodes=[
            node("n1", pods=[pod("target", labels={"security": "s2"}, namespace="other", node_name="n1")])
        ],
        pods=[pod("p", affinity=affinity("podAffinity", HOST, {"security": "s2"}, namespaces=["other"]))],
        expect={**OK, "on_node": {"p": "n1"}},
    ),
    case(
        "Pod Affinity/Anti-Affinity: should filter pod affinity topologies by namespace, empty namespace selector",
        nodes=[
            node("n1", pods=[pod("target", labels={"security": "s2"}, namespace="other", node_name="n1")])
        ],
        pods=[pod("p", affinity=affinity("podAffinity", HOST, {"security": "s2"}, namespaceSelector={}))],
        expect={**OK, "on_node": {"p": "n1"}},
    ),
    # --- Taints (Describe "Taints" in the same file) ----------------------------------------------------------
    case(
        "Taints: should taint nodes with NodePool taints",
        pools=[pool(taints=[{"key": "test", "value": "bar", "effect": "NoSchedule"}])],
        pods=[pod("p", tolerations=[{"effect": "NoSchedule", "operator": "Exists"}])],
        expect=OK,
    ),
    case(
        "Taints: should schedule pods that tolerate NodePool constraints",
        pools=[pool(taints=[{"key": "test-key", "value": "test-value", "effect": "NoSchedule"}])],
        pods=[
            pod(
                "equal",
                tolerations=[
                    {"key": "test-key", "operator": "Equal", "value": "test-value", "effect": "NoSchedule"}
                ],
            ),
            pod("exists", tolerations=[{"key": "test-key", "operator": "Exists", "effect": "NoSchedule"}]),
            pod("all", tolerations=[{"operator": "Exists"}]),
            pod("none"),
            pod(
                "wrong-value",
                tolerations=[
                    {"key": "test-key", "operator": "Equal", "value": "other", "effect": "NoSchedule"}
                ],
            ),
        ],
        expect={"scheduled": ["equal", "exists", "all"], "unschedulable": ["none", "wrong-value"]},
    ),
    case(
        "Taints: should provision nodes with taints and schedule pods if the taint is only a startup taint",
        pools=[
            pool(startupTaints=[{"key": "ignore-me", "value": "nothing-to-see-here", "effect": "NoSchedule"}])
        ],
        pods=[pod("p")],
        expect=OK,
    ),
    case(
        "Taints: should not generate taints for OpExists",
        pods=[pod("p", tolerations=[{"key": "test-key", "operator": "Exists", "effect": "NoExecute"}])],
        expect=OK,
    ),
]
