"""Scheduling, after kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/suite_test.go` (v1.14.1).

Karpenter's fake provider maps onto real us-east-1 offerings: test-zone-1/2/3 are us-east-1a/b/c,
"default-instance-type" is m5.large, "arm-instance-type" m6g.large, "small-instance-type" t3.small, the fake
integer label is `karpenter.k8s.aws/instance-cpu`, the fake size label `karpenter.k8s.aws/instance-size` and
the "exotic" label only some types carry is `karpenter.k8s.aws/instance-gpu-name`. The upstream file repeats
its "Well Known Labels", "Constraints Validation" and "Scheduling Logic" contexts verbatim; each is translated
once.
"""

from __future__ import annotations

from tests.builders import expr, node_affinity
from tests.conformance.model import CORE, Source
from tests.conformance.scheduling import case as _case
from tests.conformance.scheduling import node, pod, pods
from tests.conformance.scheduling import pool as _pool

SRC = Source(CORE, "pkg/controllers/provisioning/scheduling/suite_test.go")
Z1, Z2, Z3 = "us-east-1a", "us-east-1b", "us-east-1c"
ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
IT = "node.kubernetes.io/instance-type"
CT = "karpenter.sh/capacity-type"
CPU = "karpenter.k8s.aws/instance-cpu"
GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
KEY = "test-key"


def req(key: str, op: str, *values: str) -> dict[str, object]:
    return expr(key, op, *values)


def pool(name: str = "default", **spec: object) -> dict[str, object]:
    """The suite's NodePool: every capacity type allowed, plus what the test adds."""
    extra = list(spec.pop("requirements", []))  # type: ignore[call-overload]
    return _pool(name, requirements=[req(CT, "In", "spot", "on-demand", "reserved"), *extra], **spec)


def case(source: Source, it: str, *, pools: list[dict[str, object]] | None = None, **data: object) -> object:
    return _case(source, it, pools=pools if pools is not None else [pool()], **data)


def needs(*exprs: dict[str, object], prefer: list[dict[str, object]] | None = None) -> dict[str, object]:
    """Pod affinity: one required term with `exprs` (if any), one preferred term with `prefer` (weight 1)."""
    return node_affinity(*([list(exprs)] if exprs else []), preferred=[(1, prefer)] if prefer else [])


def one(
    it: str, *, pools: list[dict[str, object]] | None = None, expect: dict[str, object], **pod_options: object
) -> object:
    """A case with a single pod named `p`."""
    return case(SRC, it, pools=pools, pods=[pod("p", **pod_options)], expect=expect)


LABELLED = [pool(labels={KEY: "test-value"})]
KEYED = [pool(requirements=[req(KEY, "In", "test-value")])]
TWO_VALUES = [pool(requirements=[req(KEY, "In", "test-value", "another-value")])]
BOTH_ARCHS = [pool(requirements=[req(ARCH, "In", "arm64", "amd64")])]
AMD_ONLY = [pool(requirements=[req(ARCH, "In", "amd64")])]
OK = {"scheduled": "all"}
NO = {"unschedulable": "all"}

CASES = [
    # --- Custom Constraints / NodePool with Labels ------------------------------------------------------------
    one(
        "NodePool with Labels: should schedule unconstrained pods that don't have matching node selectors",
        pools=LABELLED,
        expect={**OK, "labels": {"p": {KEY: "test-value"}}},
    ),
    one(
        "NodePool with Labels: should not schedule pods that have conflicting node selectors",
        pools=LABELLED,
        node_selector={KEY: "different-value"},
        expect=NO,
    ),
    one(
        "NodePool with Labels: should not schedule pods that have node selectors with undefined key",
        node_selector={KEY: "test-value"},
        expect=NO,
    ),
    one(
        "NodePool with Labels: should schedule pods that have matching requirements",
        pools=LABELLED,
        affinity=needs(req(KEY, "In", "test-value", "another-value")),
        expect={**OK, "labels": {"p": {KEY: "test-value"}}},
    ),
    one(
        "NodePool with Labels: should not schedule pods that have conflicting requirements",
        pools=LABELLED,
        affinity=needs(req(KEY, "In", "another-value")),
        expect=NO,
    ),
    # --- Well Known Labels -----------------------------------------------------------------------------------
    one(
        "Well Known Labels: should use NodePool constraints",
        pools=[pool(requirements=[req(ZONE, "In", Z2)])],
        expect={**OK, "labels": {"p": {ZONE: Z2}}},
    ),
    one(
        "Well Known Labels: should use node selectors",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2)])],
        node_selector={ZONE: Z2},
        expect={**OK, "labels": {"p": {ZONE: Z2}}},
    ),
    one(
        "Well Known Labels: should not schedule nodes with a hostname selector",
        node_selector={"kubernetes.io/hostname": "red-node"},
        expect=NO,
    ),
    one(
        "Well Known Labels: should not schedule the pod if nodeselector unknown",
        pools=[pool(requirements=[req(ZONE, "In", Z1)])],
        node_selector={ZONE: "unknown"},
        expect=NO,
    ),
    one(
        "Well Known Labels: should not schedule if node selector outside of NodePool constraints",
        pools=[pool(requirements=[req(ZONE, "In", Z1)])],
        node_selector={ZONE: Z2},
        expect=NO,
    ),
    one(
        "Well Known Labels: should schedule compatible requirements with Operator=In",
        affinity=needs(req(ZONE, "In", Z3)),
        expect={**OK, "labels": {"p": {ZONE: Z3}}},
    ),
    *(
        one(
            f"Well Known Labels: should schedule compatible requirements with Operator={op}",
            pools=[pool(requirements=[req(CPU, op, value)])],
            expect={**OK, "labels": {"p": {CPU: want}}},
        )
        for op, value, want in (
            ("Gt", "8", ">8"),
            ("Lt", "8", "<8"),
            ("Gte", "16", ">15"),
            ("Lte", "2", "<3"),
        )
    ),
    one(
        "Well Known Labels: should not schedule incompatible preferences and requirements with Operator=In",
        affinity=needs(req(ZONE, "In", "unknown")),
        expect=NO,
    ),
    one(
        "Well Known Labels: should schedule compatible requirements with Operator=NotIn",
        affinity=needs(req(ZONE, "NotIn", Z1, Z2, "unknown")),
        expect={**OK, "not_labels": {"p": {ZONE: [Z1, Z2]}}},
    ),
    one(
        "Well Known Labels: should not schedule incompatible preferences and requirements with Operator=NotIn",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2, Z3)])],
        affinity=needs(req(ZONE, "NotIn", Z1, Z2, Z3, "unknown")),
        expect=NO,
    ),
    one(
        "Well Known Labels: should schedule compatible preferences and requirements with Operator=In",
        affinity=needs(req(ZONE, "In", Z1, Z2, Z3, "unknown"), prefer=[req(ZONE, "In", Z2, "unknown")]),
        expect={**OK, "labels": {"p": {ZONE: Z2}}},
    ),
    one(
        "Well Known Labels: should schedule incompatible preferences and requirements with Operator=In",
        affinity=needs(req(ZONE, "In", Z1, Z2, Z3, "unknown"), prefer=[req(ZONE, "In", "unknown")]),
        expect=OK,
    ),
    one(
        "Well Known Labels: should schedule compatible preferences and requirements with Operator=NotIn",
        affinity=needs(req(ZONE, "In", Z1, Z2, Z3, "unknown"), prefer=[req(ZONE, "NotIn", Z1, Z3)]),
        expect={**OK, "labels": {"p": {ZONE: Z2}}},
    ),
    one(
        "Well Known Labels: should schedule incompatible preferences and requirements with Operator=NotIn",
        affinity=needs(req(ZONE, "In", Z1, Z2, Z3, "unknown"), prefer=[req(ZONE, "NotIn", Z1, Z2, Z3)]),
        expect=OK,
    ),
    one(
        "Well Known Labels: should schedule compatible node selectors, preferences and requirements",
        node_selector={ZONE: Z3},
        affinity=needs(req(ZONE, "In", Z1, Z2, Z3), prefer=[req(ZONE, "In", Z1, Z2, Z3)]),
        expect={**OK, "labels": {"p": {ZONE: Z3}}},
    ),
    one(
        "Well Known Labels: should combine multidimensional node selectors, preferences and requirements",
        node_selector={ZONE: Z3, IT: "m6g.large"},
        affinity=needs(
            req(ZONE, "In", Z1, Z3),
            req(IT, "In", "m5.large", "m6g.large"),
            prefer=[req(ZONE, "NotIn", "unknown"), req(IT, "NotIn", "unknown")],
        ),
        expect={**OK, "labels": {"p": {ZONE: Z3, IT: "m6g.large"}}},
    ),
    # --- Constraints Validation ----------------------------------------------------------------------------
    one(
        "Constraints Validation: should not schedule pods that have node selectors with restricted labels",
        affinity=needs(req("kubernetes.io/hostname", "In", "test")),
        expect=NO,
    ),
    one(
        "Constraints Validation: should not schedule pods that have node selectors with restricted domains",
        affinity=needs(req("karpenter.sh/test", "In", "test")),
        expect=NO,
    ),
    case(
        SRC,
        "Constraints Validation: should schedule pods that have node selectors with label in the kubernetes domains",
        pools=[
            pool(
                requirements=[
                    req("kubernetes.io/test", "In", "test-value"),
                    req("k8s.io/test", "In", "test-value"),
                ]
            )
        ],
        pods=[pod("a"), pod("b")],
        expect={
            **OK,
            "labels": {n: {"kubernetes.io/test": "test-value", "k8s.io/test": "test-value"} for n in "ab"},
        },
    ),
    case(
        SRC,
        "Constraints Validation: should schedule pods that have node selectors with label in subdomain from kubernetes domains",
        pools=[
            pool(
                requirements=[
                    req("subdomain.kubernetes.io/test", "In", "test-value"),
                    req("subdomain.k8s.io/test", "In", "test-value"),
                ]
            )
        ],
        pods=[pod("a")],
        expect={
            **OK,
            "labels": {
                "a": {"subdomain.kubernetes.io/test": "test-value", "subdomain.k8s.io/test": "test-value"}
            },
        },
    ),
    case(
        SRC,
        "Constraints Validation: should schedule pods that have node selectors with label in wellknown label list",
        pods=[
            pod("zone", node_selector={ZONE: Z1}),
            pod("type", node_selector={IT: "m5.large"}),
            pod("arch", node_selector={ARCH: "arm64"}),
            pod("os", node_selector={OS: "linux"}),
            pod("spot", node_selector={CT: "spot"}),
        ],
        pools=[pool(requirements=[req(CT, "In", "spot", "on-demand")])],
        expect={
            **OK,
            "labels": {
                "zone": {ZONE: Z1},
                "type": {IT: "m5.large"},
                "arch": {ARCH: "arm64"},
                "spot": {CT: "spot"},
            },
        },
    ),
    # --- Scheduling Logic ------------------------------------------------------------------------------------
    one(
        "Scheduling Logic: should not schedule pods that have node selectors with In operator and undefined key",
        affinity=needs(req(KEY, "In", "test-value")),
        expect=NO,
    ),
    one(
        "Scheduling Logic: should schedule pods that have node selectors with NotIn operator and undefined key",
        affinity=needs(req(KEY, "NotIn", "test-value")),
        expect={**OK, "labels": {"p": {KEY: None}}},
    ),
    one(
        "Scheduling Logic: should not schedule pods that have node selectors with Exists operator and undefined key",
        affinity=needs(req(KEY, "Exists")),
        expect=NO,
    ),
    one(
        "Scheduling Logic: should schedule pods that with DoesNotExists operator and undefined key",
        affinity=needs(req(KEY, "DoesNotExist")),
        expect={**OK, "labels": {"p": {KEY: None}}},
    ),
    one(
        "Scheduling Logic: should schedule unconstrained pods that don't have matching node selectors",
        pools=KEYED,
        expect={**OK, "labels": {"p": {KEY: "test-value"}}},
    ),
    one(
        "Scheduling Logic: should schedule pods that have node selectors with matching value and In operator",
        pools=KEYED,
        affinity=needs(req(KEY, "In", "test-value")),
        expect={**OK, "labels": {"p": {KEY: "test-value"}}},
    ),
    one(
        "Scheduling Logic: should not schedule pods that have node selectors with matching value and NotIn operator",
        pools=KEYED,
        affinity=needs(req(KEY, "NotIn", "test-value")),
        expect=NO,
    ),
    one(
        "Scheduling Logic: should schedule the pod with Exists operator and defined key",
        pools=KEYED,
        affinity=needs(req(KEY, "Exists")),
        expect=OK,
    ),
    one(
        "Scheduling Logic: should not schedule the pod with DoesNotExists operator and defined key",
        pools=KEYED,
        affinity=needs(req(KEY, "DoesNotExist")),
        expect=NO,
    ),
    one(
        "Scheduling Logic: should not schedule pods that have node selectors with different value and In operator",
        pools=KEYED,
        affinity=needs(req(KEY, "In", "another-value")),
        expect=NO,
    ),
    one(
        "Scheduling Logic: should schedule pods that have node selectors with different value and NotIn operator",
        pools=KEYED,
        affinity=needs(req(KEY, "NotIn", "another-value")),
        expect={**OK, "labels": {"p": {KEY: "test-value"}}},
    ),
    case(
        SRC,
        "Scheduling Logic: should schedule compatible pods to the same node",
        pools=TWO_VALUES,
        pods=[
            pod("a", affinity=needs(req(KEY, "In", "test-value"))),
            pod("b", affinity=needs(req(KEY, "NotIn", "another-value"))),
        ],
        expect={
            **OK,
            "same_node": [["a", "b"]],
            "labels": {"a": {KEY: "test-value"}, "b": {KEY: "test-value"}},
        },
    ),
    case(
        SRC,
        "Scheduling Logic: should schedule incompatible pods to the different node",
        pools=TWO_VALUES,
        pods=[
            pod("a", affinity=needs(req(KEY, "In", "test-value"))),
            pod("b", affinity=needs(req(KEY, "In", "another-value"))),
        ],
        expect={
            **OK,
            "different_nodes": [["a", "b"]],
            "labels": {"a": {KEY: "test-value"}, "b": {KEY: "another-value"}},
        },
    ),
    one(
        "Scheduling Logic: Exists operator should not overwrite the existing value",
        affinity=needs(req(ZONE, "In", "non-existent-zone"), req(ZONE, "Exists")),
        expect=NO,
    ),
    # --- Preferential Fallback --------------------------------------------------------------------------------
    one(
        "Preferential Fallback: Required: should not relax the final term",
        pools=[pool(requirements=[req(ZONE, "In", Z1), req(IT, "In", "m5.large")])],
        affinity=needs(req(ZONE, "In", "invalid")),
        expect=NO,
    ),
    one(
        "Preferential Fallback: Required: should relax multiple terms",
        affinity=node_affinity(
            [req(ZONE, "In", "invalid")],
            [req(ZONE, "In", "invalid")],
            [req(ZONE, "In", Z1)],
            [req(ZONE, "In", Z2)],
        ),
        expect={**OK, "labels": {"p": {ZONE: Z1}}},
    ),
    one(
        "Preferential Fallback: Preferred: should relax all terms",
        affinity=node_affinity(
            preferred=[(1, [req(ZONE, "In", "invalid")]), (1, [req(IT, "In", "invalid")])]
        ),
        expect=OK,
    ),
    one(
        "Preferential Fallback: Preferred: should relax to use lighter weights",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2)])],
        affinity=node_affinity(
            preferred=[
                (100, [req(IT, "In", "test-zone-3")]),
                (50, [req(ZONE, "In", Z2)]),
                (1, [req(ZONE, "In", Z1)]),
            ]
        ),
        expect={**OK, "labels": {"p": {ZONE: Z2}}},
    ),
    one(
        "Preferential Fallback: Preferred: should schedule even if preference is conflicting with requirement",
        affinity=node_affinity([req(ZONE, "In", Z3)], preferred=[(1, [req(ZONE, "NotIn", Z3)])]),
        expect={**OK, "labels": {"p": {ZONE: Z3}}},
    ),
    one(
        "Preferential Fallback: Preferred: should schedule even if preference requirements are conflicting",
        affinity=needs(prefer=[req(ZONE, "In", "invalid"), req(ZONE, "NotIn", "invalid")]),
        expect=OK,
    ),
    # --- Instance Type Compatibility --------------------------------------------------------------------------
    one(
        "Instance Type Compatibility: should not schedule if requesting more resources than any instance type has",
        cpu="2000",  # upstream asks 512 of its fake types; us-east-1 has 896-vCPU types
        expect=NO,
    ),
    case(
        SRC,
        "Instance Type Compatibility: should launch pods with different archs on different instances",
        pools=BOTH_ARCHS,
        pods=[pod("amd", node_selector={ARCH: "amd64"}), pod("arm", node_selector={ARCH: "arm64"})],
        expect={
            **OK,
            "different_nodes": [["amd", "arm"]],
            "labels": {"amd": {ARCH: "amd64"}, "arm": {ARCH: "arm64"}},
        },
    ),
    one(
        "Instance Type Compatibility: should exclude instance types that are not supported by the pod constraints (node affinity/instance type)",
        pools=AMD_ONLY,
        affinity=needs(req(IT, "In", "m6g.large")),
        expect=NO,
    ),
    one(
        "Instance Type Compatibility: should exclude instance types that are not supported by the pod constraints (node affinity/operating system)",
        pools=AMD_ONLY,
        affinity=needs(req(OS, "In", "ios")),
        expect=NO,
    ),
    one(
        "Instance Type Compatibility: should exclude instance types that are not supported by the provider constraints (arch)",
        pools=[pool(requirements=[req(ARCH, "In", "amd64"), req(IT, "In", "m5.large", "m6g.4xlarge")])],
        cpu="14",
        expect=NO,
    ),
    case(
        SRC,
        "Instance Type Compatibility: should launch pods with different operating systems on different instances",
        pools=BOTH_ARCHS,
        pods=[pod("linux", node_selector={OS: "linux"}), pod("windows", node_selector={OS: "windows"})],
        expect={"scheduled": ["linux"], "unschedulable": ["windows"]},
        difference="Windows nodes are not offered by Longshore's catalog yet (separate work item)",
    ),
    case(
        SRC,
        "Instance Type Compatibility: should launch pods with different instance type node selectors on different instances",
        pools=BOTH_ARCHS,
        pods=[
            pod("small", node_selector={"beta.kubernetes.io/instance-type": "t3.small"}),
            pod("default", node_selector={IT: "m5.large"}),
        ],
        expect={
            **OK,
            "different_nodes": [["small", "default"]],
            "labels": {"small": {IT: "t3.small"}, "default": {IT: "m5.large"}},
        },
    ),
    case(
        SRC,
        "Instance Type Compatibility: should launch pods with different zone selectors on different instances",
        pools=BOTH_ARCHS,
        pods=[pod("one", node_selector={ZONE: Z1}), pod("two", node_selector={ZONE: Z2})],
        expect={**OK, "different_nodes": [["one", "two"]], "labels": {"one": {ZONE: Z1}, "two": {ZONE: Z2}}},
    ),
    case(
        SRC,
        "Instance Type Compatibility: should launch pods with resources that aren't on any single instance type on different instances",
        pods=[
            pod("gpu", extra_requests={"nvidia.com/gpu": "1"}),
            pod("neuron", extra_requests={"aws.amazon.com/neuron": "1"}),
        ],
        expect={**OK, "different_nodes": [["gpu", "neuron"]]},
    ),
    one(
        "Instance Type Compatibility: should fail to schedule a pod with resources requests that aren't on a single instance type",
        extra_requests={"nvidia.com/gpu": "1", "aws.amazon.com/neuron": "1"},
        expect=NO,
    ),
    case(
        SRC,
        "Provider Specific Labels: should filter instance types that match labels",
        pods=[
            pod("large", node_selector={"karpenter.k8s.aws/instance-size": "large"}),
            pod("small", node_selector={"karpenter.k8s.aws/instance-size": "small"}),
        ],
        expect={
            **OK,
            "labels": {
                "large": {"karpenter.k8s.aws/instance-size": "large"},
                "small": {"karpenter.k8s.aws/instance-size": "small"},
            },
        },
    ),
    case(
        SRC,
        "Provider Specific Labels: should not schedule with incompatible labels",
        pods=[
            pod("a", node_selector={"karpenter.k8s.aws/instance-size": "large", IT: "t3.small"}),
            pod("b", node_selector={"karpenter.k8s.aws/instance-size": "small", IT: "m5.24xlarge"}),
        ],
        expect=NO,
    ),
    case(
        SRC,
        "Provider Specific Labels: should schedule optional labels",
        pods=[pod("p", affinity=needs(req(GPU_NAME, "Exists")))],
        expect={**OK, "labels": {"p": {GPU_NAME: "*"}}},
    ),
    one(
        "Provider Specific Labels: should schedule without optional labels if disallowed",
        affinity=needs(req(GPU_NAME, "DoesNotExist")),
        expect={**OK, "labels": {"p": {GPU_NAME: None}}},
    ),
    # --- Binpacking ---------------------------------------------------------------------------------------
    one(
        "Binpacking: should schedule a small pod on the smallest instance",
        memory="100M",
        expect={**OK, "labels": {"p": {CPU: "<3"}}},
    ),
    one(
        "Binpacking: should schedule a small pod on the smallest possible instance type",
        memory="2000M",
        expect={**OK, "labels": {"p": {CPU: "<3"}}},
    ),
    one(
        "Binpacking: should take pod runtime class into consideration",
        cpu="1",
        manifest={"spec": {"overhead": {"cpu": "2"}}},  # what admission copies from the RuntimeClass
        expect={**OK, "labels": {"p": {CPU: ">2"}}},
    ),
    case(
        SRC,
        "Binpacking: should schedule multiple small pods on the smallest possible instance type",
        pods=pods("small", 5, memory="10M"),
        expect={**OK, "labels": {f"small-{i}": {CPU: "<3"} for i in range(5)}},
    ),
    case(
        SRC,
        "Binpacking: should create new nodes when a node is at capacity",
        pools=[pool(requirements=[req(IT, "In", "m5.large")])],
        pods=pods("big", 40, memory="1.8G", node_selector={ARCH: "amd64"}),
        # an m5.large holds four 1.8G pods (upstream's fake type holds two): ten nodes, no more
        expect={**OK, "claims": 10},
    ),
    case(
        SRC,
        "Binpacking: should pack small and large pods together",
        pools=[pool(requirements=[req(IT, "In", "m5.large")])],
        pods=[
            *pods("large", 28, memory="2G", node_selector={ARCH: "amd64"}),
            *pods("small", 14, memory="400M", node_selector={ARCH: "amd64"}),
        ],
        # at most three 2G pods fit an m5.large, so 10 nodes are needed for the large pods and the small ones fit
        # beside them (upstream: the small pods add no node)
        expect={**OK, "claims": 10},
    ),
    case(
        SRC,
        "Binpacking: should pack nodes tightly",
        pools=[pool(requirements=[req(IT, "In", "m5.large", "m5.xlarge", "m5.2xlarge", "m5.4xlarge")])],
        pods=[pod("big", cpu="7.5"), pod("small", cpu="1")],
        expect={**OK, "claims": 2, "labels": {"big": {IT: "m5.2xlarge"}, "small": {IT: "m5.large"}}},
    ),
    one(
        "Binpacking: should handle zero-quantity resource requests",
        extra_requests={"foo.com/weird-resources": "0"},
        expect=OK,
    ),
    one(
        "Binpacking: should not schedule pods that exceed every instance type's capacity",
        memory="64Ti",
        expect=NO,
    ),
    case(
        SRC,
        "Binpacking: should create new nodes when a node is at capacity due to pod limits per node",
        pools=[pool(requirements=[req(IT, "In", "t3.nano")])],  # 4 pods per node (2 ENIs x 2 IPs)
        pods=pods("tiny", 25, cpu="1m", memory="1m", node_selector={ARCH: "amd64"}),
        expect={**OK, "claims": 7},
    ),
    one(
        "Binpacking: should take into account initContainer resource requests when binpacking",
        cpu="1",
        manifest={
            "spec": {
                "initContainers": [
                    {"name": "init", "image": "pause", "resources": {"requests": {"cpu": "6"}}}
                ]
            }
        },
        expect={**OK, "labels": {"p": {CPU: ">6"}}},
    ),
    one(
        "Binpacking: should not schedule pods when initContainer resource requests are greater than available instance types",
        manifest={
            "spec": {
                "initContainers": [
                    {"name": "init", "image": "pause", "resources": {"requests": {"cpu": "2000"}}}
                ]
            }
        },
        expect=NO,
    ),
    # --- In-Flight Nodes --------------------------------------------------------------------------------------
    case(
        SRC,
        "In-Flight Nodes: should not launch a second node if there is an in-flight node that can support the pod",
        nodes=[node("inflight", in_flight=True, initialized=False, zone=Z2)],
        pods=[pod("second", cpu="10m")],
        expect={**OK, "claims": 0, "on_node": {"second": "inflight"}},
    ),
    case(
        SRC,
        "In-Flight Nodes: should not launch a second node if there is an in-flight node that can support the pod (node selectors)",
        nodes=[node("inflight", in_flight=True, initialized=False, zone=Z2)],
        pods=[
            pod("second", cpu="10m", affinity=needs(req(ZONE, "In", Z1, Z2))),
            pod("third", cpu="10m", affinity=needs(req(ZONE, "In", Z1, Z3))),
        ],
        expect={**OK, "on_node": {"second": "inflight"}, "different_nodes": [["second", "third"]]},
    ),
    case(
        SRC,
        "In-Flight Nodes: should launch a second node if a pod won't fit on the existingNodes node",
        nodes=[
            node(
                "inflight",
                in_flight=True,
                initialized=False,
                allocatable={"cpu": "2", "memory": "4Gi", "pods": "10"},
                pods=[pod("first", cpu="1001m", node_name="inflight")],
            )
        ],
        pods=[pod("second", cpu="1")],
        expect={**OK, "claims": 1},
    ),
    case(
        SRC,
        "In-Flight Nodes: should launch a second node if a pod isn't compatible with the existingNodes node (node selector)",
        nodes=[node("inflight", in_flight=True, initialized=False)],
        pods=[pod("second", node_selector={ARCH: "arm64"})],
        expect={**OK, "claims": 1, "labels": {"second": {ARCH: "arm64"}}},
    ),
    case(
        SRC,
        "In-Flight Nodes: should launch a second node if an in-flight node is terminating",
        nodes=[node("inflight", in_flight=True, initialized=False, deleting=True)],
        pods=[pod("second", cpu="10m")],
        expect={**OK, "claims": 1},
    ),
    case(
        SRC,
        "In-Flight Nodes: Topology: should balance pods across zones with in-flight nodes",
        pools=[pool(requirements=[req(ZONE, "In", Z1, Z2, Z3)])],
        nodes=[
            node(
                f"inflight-{z}",
                in_flight=True,
                initialized=False,
                zone=z,
                pods=[
                    pod(f"old-{z}-{i}", labels={"foo": "bar"}, node_name=f"inflight-{z}") for i in range(n)
                ],
            )
            for z, n in ((Z1, 1), (Z2, 1), (Z3, 2))
        ],
        pods=pods(
            "new",
            5,
            labels={"foo": "bar"},
            spread=[
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"foo": "bar"}},
                }
            ],
        ),
        expect={**OK, "claims": 0, "counts": [(ZONE, "foo=bar", [3, 3, 3])]},
    ),
    case(
        SRC,
        "In-Flight Nodes: Topology: should balance pods across hostnames with in-flight nodes",
        nodes=[
            node(
                f"inflight-{i}",
                in_flight=True,
                initialized=False,
                pods=[pod(f"old-{i}", labels={"foo": "bar"}, node_name=f"inflight-{i}")],
            )
            for i in range(4)
        ],
        pods=pods(
            "new",
            5,
            labels={"foo": "bar"},
            spread=[
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"foo": "bar"}},
                }
            ],
        ),
        expect={**OK, "claims": 5, "counts": [("kubernetes.io/hostname", "foo=bar", [1] * 9)]},
    ),
    case(
        SRC,
        "In-Flight Nodes: Taints: should assume pod will schedule to a tainted node with no taints",
        nodes=[
            node(
                "inflight",
                in_flight=True,
                initialized=False,
                allocatable={"cpu": "8", "memory": "32Gi", "pods": "110"},
            )
        ],
        pods=[pod("second")],
        expect={**OK, "on_node": {"second": "inflight"}},
    ),
    case(
        SRC,
        "In-Flight Nodes: Taints: should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized",
        nodes=[
            node(
                "inflight",
                in_flight=True,
                initialized=False,
                taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
            )
        ],
        pods=[pod("second")],
        expect={**OK, "on_node": {"second": "inflight"}},
    ),
    case(
        SRC,
        "In-Flight Nodes: Taints: should not assume pod will schedule to a tainted node",
        nodes=[
            node(
                "tainted",
                labels={"karpenter.sh/initialized": "true"},
                taints=[{"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}],
            )
        ],
        pods=[pod("second")],
        expect={**OK, "claims": 1},
    ),
    case(
        SRC,
        "In-Flight Nodes: Taints: should assume pod will schedule to a tainted node with a custom startup taint",
        pools=[pool(startupTaints=[{"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}])],
        nodes=[
            node(
                "inflight",
                in_flight=True,
                initialized=False,
                taints=[{"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}],
                startup_taints=[{"key": "foo.com/taint", "value": "tainted", "effect": "NoSchedule"}],
            )
        ],
        pods=[pod("second")],
        expect={**OK, "on_node": {"second": "inflight"}},
    ),
    case(
        SRC,
        "In-Flight Nodes: Taints: should not assume pod will schedule to a node with startup taints after initialization",
        pools=[
            pool(startupTaints=[{"key": "ignore-me", "value": "nothing-to-see-here", "effect": "NoSchedule"}])
        ],
        nodes=[
            node(
                "ready",
                labels={"karpenter.sh/initialized": "true"},
                taints=[{"key": "ignore-me", "value": "nothing-to-see-here", "effect": "NoSchedule"}],
            )
        ],
        pods=[pod("second")],
        expect={**OK, "claims": 1},
    ),
    case(
        SRC,
        "In-Flight Nodes: Taints: should consider a tainted NotReady node as in-flight even if initialized",
        nodes=[
            node(
                "notready",
                in_flight=True,
                labels={"karpenter.sh/initialized": "true"},
                taints=[
                    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                    {
                        "key": "node.cloudprovider.kubernetes.io/uninitialized",
                        "value": "true",
                        "effect": "NoSchedule",
                    },
                ],
            )
        ],
        pods=[pod("second")],
        expect={**OK, "on_node": {"second": "notready"}},
    ),
    case(
        SRC,
        "In-Flight Nodes: should pack in-flight nodes before launching new nodes",
        nodes=[
            node(
                f"inflight-{i}",
                in_flight=True,
                initialized=False,
                allocatable={"cpu": "2", "memory": "8Gi", "pods": "110"},
            )
            for i in range(2)
        ],
        pods=pods("web", 4, cpu="900m"),
        expect={**OK, "claims": 0},
    ),
    case(
        SRC,
        "In-Flight Nodes: should schedule pods with the same host port to different nodes",
        pods=[pod("a", host_ports=[8080]), pod("b", host_ports=[8080])],
        expect={**OK, "different_nodes": [["a", "b"]]},
    ),
    # --- Existing Nodes ---------------------------------------------------------------------------------------
    case(
        SRC,
        "Existing Nodes: should schedule a pod to an existing node unowned by Karpenter",
        nodes=[node("unowned", pool_name=None, allocatable={"cpu": "10", "memory": "10Gi", "pods": "110"})],
        pods=[pod("p", cpu="10m")],
        expect={**OK, "on_node": {"p": "unowned"}, "claims": 0},
    ),
    case(
        SRC,
        "Existing Nodes: should schedule multiple pods to an existing node unowned by Karpenter",
        nodes=[node("unowned", pool_name=None, allocatable={"cpu": "10", "memory": "100Gi", "pods": "110"})],
        pods=pods("p", 100, cpu="10m"),
        expect={**OK, "claims": 0, "on_node": {f"p-{i}": "unowned" for i in range(100)}},
    ),
    case(
        SRC,
        "Existing Nodes: should order initialized nodes for scheduling uninitialized nodes",
        nodes=[
            *(node(f"uninit-{i}", in_flight=True, initialized=False) for i in range(5)),
            node("ready", labels={"karpenter.sh/initialized": "true"}),
            *(node(f"uninit-{i}", in_flight=True, initialized=False) for i in range(5, 10)),
        ],
        pods=[pod("p")],
        expect={**OK, "on_node": {"p": "ready"}},
    ),
    case(
        SRC,
        "Existing Nodes: should consider a pod incompatible with an existing node but compatible with NodePool",
        nodes=[node("existing", zone=Z1, allocatable={"cpu": "10", "memory": "10Gi", "pods": "110"})],
        pods=[pod("p", affinity=needs(req(ZONE, "In", Z2)))],
        expect={**OK, "claims": 1, "labels": {"p": {ZONE: Z2}}},
    ),
    # --- NodePool requirements instance filtering ---------------------------------------------------------------
    one(
        "NodePool requirements instance filtering: should return appropriate pod error when no available instance types exist",
        pools=[pool(requirements=[req(IT, "In", "m5.large"), req(ARCH, "In", "arm64")])],
        expect=NO,
    ),
    case(
        SRC,
        "NodePool requirements instance filtering: should handle multiple pods when requirements filter out all instance types",
        pools=[pool(requirements=[req(IT, "In", "m5.large"), req(ARCH, "In", "arm64")])],
        pods=pods("p", 3),
        expect=NO,
    ),
    one(
        "NodePool requirements instance filtering: should handle conflicting requirements that eliminate all instance types",
        pools=[pool(requirements=[req(CPU, "Gt", "64"), req(CPU, "Lt", "4")])],
        expect=NO,
    ),
    one(
        "NodePool requirements instance filtering: should handle zone requirements that filter out all instance types",
        pools=[pool(requirements=[req(ZONE, "In", "us-east-1z")])],
        expect=NO,
    ),
]
