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
from tests.conformance.scheduling import case, pod, pool

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
        known_bug="multi-valued pool labels: a pool requirement `In [a, b]` on a custom key is not narrowed per claim",
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
        known_bug="instance labels only some types define: Exists does not narrow the claim to types carrying the label",
    ),
    one(
        "Provider Specific Labels: should schedule without optional labels if disallowed",
        affinity=needs(req(GPU_NAME, "DoesNotExist")),
        expect={**OK, "labels": {"p": {GPU_NAME: None}}},
    ),
]
