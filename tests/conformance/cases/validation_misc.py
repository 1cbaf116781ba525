"""Validation cases from the other Karpenter validation tests, each applied to the NodePool that carries the
rule (a NodePool template is a NodeClaim template):

* core `pkg/apis/v1/nodeclaim_validation_cel_test.go` (v1.14.1): rules only the NodeClaim suite exercises;
* core `pkg/apis/v1/nodeclaim_validation.go` (`validateTaintsField`): duplicate taint key/effect pairs;
* aws `pkg/apis/v1/nodepool_validation_cel_test.go` (v1.14.1): capacity-type and tenancy values;
* core `pkg/apis/v1beta1/nodepool_validation_cel_test.go` (v0.37.7): the v1beta1 disruption block.
"""

from __future__ import annotations

from tests.conformance.model import AWS, CORE, Source
from tests.conformance.validation import accept, reject

CLAIM = Source(CORE, "pkg/apis/v1/nodeclaim_validation_cel_test.go")
CLAIM_GO = Source(CORE, "pkg/apis/v1/nodeclaim_validation.go")
AWS_POOL = Source(AWS, "pkg/apis/v1/nodepool_validation_cel_test.go")
V1BETA1 = Source(CORE, "pkg/apis/v1beta1/nodepool_validation_cel_test.go")
T = "spec.template.spec"
D = "spec.disruption"
CT = "karpenter.sh/capacity-type"
TENANCY = "karpenter.k8s.aws/instance-tenancy"
AWS_WELL_KNOWN = (
    "karpenter.k8s.aws/instance-category",
    "karpenter.k8s.aws/instance-family",
    "karpenter.k8s.aws/instance-generation",
    "karpenter.k8s.aws/instance-size",
    "karpenter.k8s.aws/instance-cpu",
    "karpenter.k8s.aws/instance-cpu-manufacturer",
    "karpenter.k8s.aws/instance-memory",
    "karpenter.k8s.aws/instance-hypervisor",
    "karpenter.k8s.aws/instance-gpu-name",
    "topology.k8s.aws/zone-id",
)


def _req(key: str, op: str, *values: str) -> dict[str, object]:
    return {"key": key, "operator": op, "values": list(values)} if values else {"key": key, "operator": op}


def _taint(key: str, effect: str) -> dict[str, str]:
    return {"key": key, "effect": effect}


CASES = [
    accept(CLAIM, "NodeClassRef: should succeed for valid group", {}),
    reject(
        CLAIM,
        "NodeClassRef: should fail for invalid group",
        {f"{T}.nodeClassRef.group": "karpenter.test.sh"},
        f"{T}.nodeClassRef.group",
        "karpenter.test.sh",
    ),
    reject(
        CLAIM,
        "should error when requirements is greater than 100",
        {f"{T}.requirements": [_req(f"example.com/key-{i}", "Exists") for i in range(101)]},
        f"{T}.requirements",
        "101",
    ),
    *(
        accept(
            CLAIM,
            f"ExpireAfter: should succeed on a valid expireAfter [{value}]",
            {f"{T}.expireAfter": value},
        )
        for value in ("30s", "1h30m5s", "Never")
    ),
    *(
        reject(
            CLAIM,
            f"ExpireAfter: should fail on an invalid expireAfter [{value}]",
            {f"{T}.expireAfter": value},
            f"{T}.expireAfter",
            value,
        )
        for value in ("-1s", "1hr", "FooNever")
    ),
    reject(
        CLAIM_GO,
        "validateTaintsField: duplicate taint Key/Effect pair (taints)",
        {f"{T}.taints": [_taint("dedicated", "NoSchedule"), _taint("dedicated", "NoSchedule")]},
        f"{T}.taints[1].key",
        "dedicated",
    ),
    reject(
        CLAIM_GO,
        "validateTaintsField: duplicate taint Key/Effect pair (taints and startupTaints)",
        {
            f"{T}.taints": [_taint("example.com/init", "NoSchedule")],
            f"{T}.startupTaints": [_taint("example.com/init", "NoSchedule")],
        },
        f"{T}.startupTaints[0].key",
        "example.com/init",
    ),
    accept(
        CLAIM_GO,
        "validateTaintsField: the same key with another effect is not a duplicate",
        {f"{T}.taints": [_taint("a", "NoSchedule")], f"{T}.startupTaints": [_taint("a", "NoExecute")]},
    ),
    # --- aws NodePool ------------------------------------------------------------------------------------------
    *(
        accept(
            AWS_POOL,
            f"Requirements: should allow well known label exceptions [{key}]",
            {f"{T}.requirements": [_req(key, "In", "test")]},
        )
        for key in AWS_WELL_KNOWN
    ),
    reject(
        AWS_POOL,
        "should fail validation with only invalid capacity types",
        {f"{T}.requirements": [_req(CT, "In", "xspot")]},
        f"{T}.requirements[0].values",
        "xspot",
    ),
    accept(
        AWS_POOL,
        "should pass validation with valid capacity types",
        {f"{T}.requirements": [_req(CT, "In", "on-demand")]},
    ),
    accept(
        AWS_POOL,
        "should fail open if invalid and valid capacity types are present",
        {f"{T}.requirements": [_req(CT, "In", "on-demand", "xspot")]},
    ),
    reject(
        AWS_POOL,
        "should fail validation with only invalid tenancy types",
        {f"{T}.requirements": [_req(TENANCY, "In", "xdedicated")]},
        f"{T}.requirements[0].values",
        "xdedicated",
    ),
    accept(
        AWS_POOL,
        "should pass validation with valid tenancy types",
        {f"{T}.requirements": [_req(TENANCY, "In", "default")]},
    ),
    accept(
        AWS_POOL,
        "should fail open if invalid and valid tenancy types are present",
        {f"{T}.requirements": [_req(TENANCY, "In", "default", "xdedicated")]},
    ),
    *(
        accept(
            AWS_POOL,
            f"Labels: should allow well known label exceptions [{key}]",
            {"spec.template.metadata.labels": {key: "test"}},
        )
        for key in (
            *AWS_WELL_KNOWN,
            "topology.kubernetes.io/zone",
            "node.kubernetes.io/instance-type",
            "kubernetes.io/arch",
        )
    ),
    # --- v1beta1 disruption ------------------------------------------------------------------------------------
    reject(
        V1BETA1,
        "should fail on negative expireAfter",
        {f"{D}.expireAfter": "-1s"},
        f"{D}.expireAfter",
        "-1s",
        target="nodepool_v1beta1",
    ),
    accept(
        V1BETA1,
        "should succeed on a disabled expireAfter",
        {f"{D}.expireAfter": "Never"},
        target="nodepool_v1beta1",
    ),
    accept(
        V1BETA1,
        "should succeed on a valid expireAfter",
        {f"{D}.expireAfter": "30s"},
        target="nodepool_v1beta1",
    ),
    reject(
        V1BETA1,
        "should fail on negative consolidateAfter",
        {f"{D}.consolidationPolicy": "WhenEmpty", f"{D}.consolidateAfter": "-1s"},
        f"{D}.consolidateAfter",
        "-1s",
        target="nodepool_v1beta1",
    ),
    accept(
        V1BETA1,
        "should succeed on a disabled consolidateAfter",
        {f"{D}.consolidationPolicy": "WhenEmpty", f"{D}.consolidateAfter": "Never"},
        target="nodepool_v1beta1",
    ),
    accept(
        V1BETA1,
        "should succeed when setting consolidateAfter with consolidationPolicy=WhenEmpty",
        {f"{D}.consolidationPolicy": "WhenEmpty", f"{D}.consolidateAfter": "30s"},
        target="nodepool_v1beta1",
    ),
    reject(
        V1BETA1,
        "should fail when setting consolidateAfter with consolidationPolicy=WhenUnderutilized",
        {f"{D}.consolidationPolicy": "WhenUnderutilized", f"{D}.consolidateAfter": "30s"},
        f"{D}.consolidateAfter",
        "30s",
        target="nodepool_v1beta1",
    ),
    accept(
        V1BETA1,
        "should succeed when not setting consolidateAfter to 'Never' with consolidationPolicy=WhenUnderutilized",
        {f"{D}.consolidationPolicy": "WhenUnderutilized", f"{D}.consolidateAfter": "Never"},
        target="nodepool_v1beta1",
    ),
    reject(
        V1BETA1,
        "Labels: v1beta1 still restricts the kubernetes.io domain",
        {"spec.template.metadata.labels": {"kubernetes.io/team": "a"}},
        "spec.template.metadata.labels",
        "kubernetes.io/team",
        target="nodepool_v1beta1",
    ),
]
