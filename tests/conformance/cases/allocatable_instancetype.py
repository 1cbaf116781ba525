"""Allocatable and max-pods figures, after aws/karpenter-provider-aws `pkg/providers/instancetype/suite_test.go`
(v1.14.1, "Overhead", "Network Interfaces" and the pod-density tests). Windows entries are left out: Windows
support is a separate piece of work (see docs/conformance.md).
"""

from __future__ import annotations

from tests.conformance.allocatable import case
from tests.conformance.model import AWS, Source

SRC = Source(AWS, "pkg/providers/instancetype/suite_test.go")
K = "spec.kubelet"
RESERVED = {"systemReserved": {"memory": "20Gi"}, "kubeReserved": {"memory": "10Gi"}}
NO_VM_OVERHEAD = {"vm_memory_overhead_percent": 0.0}
ALIAS = "spec.amiSelectorTerms"


def _alias(alias: str, family: str | None = None) -> dict[str, object]:
    changes: dict[str, object] = {ALIAS: [{"alias": alias}]}
    if family:
        changes["spec.amiFamily"] = family
    return changes


def _eviction(
    it: str, kubelet: dict[str, object], expect: list[tuple[str, str, object]], **changes: object
) -> object:
    return case(
        SRC,
        it,
        "m5.xlarge",
        expect,
        nodeclass={K: {**RESERVED, **kubelet}, **changes},
        settings=NO_VM_OVERHEAD,
    )


def _custom() -> dict[str, object]:
    return {ALIAS: [{"id": "ami-0123456789abcdef0"}], "spec.amiFamily": "Custom"}


CASES = [
    case(
        SRC,
        "System Reserved Resources: should use defaults when no kubelet is specified",
        "m5.xlarge",
        [
            ("system_reserved.cpu", "==", "0"),
            ("system_reserved.memory", "==", "0"),
            ("system_reserved.ephemeral-storage", "==", "0"),
        ],
    ),
    case(
        SRC,
        "System Reserved Resources: should override system reserved cpus when specified",
        "m5.xlarge",
        [
            ("system_reserved.cpu", "==", "2"),
            ("system_reserved.memory", "==", "20Gi"),
            ("system_reserved.ephemeral-storage", "==", "10Gi"),
        ],
        nodeclass={K: {"systemReserved": {"cpu": "2", "memory": "20Gi", "ephemeral-storage": "10Gi"}}},
    ),
    case(
        SRC,
        "Kube Reserved Resources: should use defaults when no kubelet is specified",
        "m5.xlarge",
        [
            ("kube_reserved.cpu", "==", "80m"),
            ("kube_reserved.memory", "==", "893Mi"),
            ("kube_reserved.ephemeral-storage", "==", "1Gi"),
        ],
    ),
    case(
        SRC,
        "Kube Reserved Resources: should override kube reserved when specified",
        "m5.xlarge",
        [
            ("kube_reserved.cpu", "==", "2"),
            ("kube_reserved.memory", "==", "10Gi"),
            ("kube_reserved.ephemeral-storage", "==", "2Gi"),
        ],
        nodeclass={
            K: {
                "systemReserved": {"cpu": "1", "memory": "20Gi", "ephemeral-storage": "1Gi"},
                "kubeReserved": {"cpu": "2", "memory": "10Gi", "ephemeral-storage": "2Gi"},
            }
        },
    ),
    _eviction(
        "Eviction Hard: should override eviction threshold when specified as a quantity",
        {"evictionHard": {"memory.available": "500Mi"}},
        [("eviction.memory", "==", "500Mi")],
    ),
    _eviction(
        "Eviction Hard: should override eviction threshold when specified as a percentage value",
        {"evictionHard": {"memory.available": "10%"}},
        [("eviction.memory", "~", ("capacity.memory", 0.10))],
    ),
    _eviction(
        "Eviction Hard: should consider the eviction threshold disabled when specified as 100%",
        {"evictionHard": {"memory.available": "100%"}},
        [("eviction.memory", "==", "0")],
    ),
    _eviction(
        "Eviction Hard: should used default eviction threshold for memory when evictionHard not specified",
        {"evictionSoft": {"memory.available": "50Mi"}, "evictionSoftGracePeriod": {"memory.available": "1m"}},
        [("eviction.memory", "==", "100Mi")],
    ),
    _eviction(
        "Eviction Soft: should use default threshold when only evictionSoft is specified",
        {
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        [("eviction.memory", "==", "100Mi")],
    ),
    _eviction(
        "Eviction Soft: should use evictionHard percentage and ignore evictionSoft percentage",
        {
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "10%"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        [("eviction.memory", "~", ("capacity.memory", 0.05))],
    ),
    _eviction(
        "Eviction Soft: should use default threshold when evictionSoft is 100% (ignored)",
        {"evictionSoft": {"memory.available": "100%"}, "evictionSoftGracePeriod": {"memory.available": "1m"}},
        [("eviction.memory", "==", "100Mi")],
    ),
    _eviction(
        "Eviction Soft: should ignore eviction threshold when using Bottlerocket AMI",
        {
            "evictionHard": {"memory.available": "1Gi"},
            "evictionSoft": {"memory.available": "10Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        [("eviction.memory", "==", "1Gi")],
        **{ALIAS: [{"alias": "bottlerocket@latest"}]},
    ),
    case(
        SRC,
        "should take the default eviction threshold when none is specified",
        "m5.xlarge",
        [
            ("eviction.cpu", "==", "0"),
            ("eviction.memory", "==", "100Mi"),
            ("eviction.ephemeral-storage", "==", "2Gi"),
        ],
        nodeclass={K: {}},
        settings=NO_VM_OVERHEAD,
    ),
    _eviction(
        "should use only evictionHard for overhead, ignoring evictionSoft",
        {
            "evictionHard": {"memory.available": "1Gi"},
            "evictionSoft": {"memory.available": "3Gi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        [("eviction.memory", "==", "1Gi")],
    ),
    _eviction(
        "should use only evictionHard percentage for overhead, ignoring evictionSoft",
        {
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "2%"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        [("eviction.memory", "~", ("capacity.memory", 0.05))],
    ),
    _eviction(
        "should use only evictionHard value with mixed percentage/value types",
        {
            "evictionHard": {"memory.available": "1Gi"},
            "evictionSoft": {"memory.available": "10%"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
        },
        [("eviction.memory", "==", "1Gi")],
    ),
    *(
        case(
            SRC,
            f"should default max pods based off of network interfaces [{name}]",
            name,
            [("capacity.pods", "==", pods)],
        )
        for name, pods in (("t3.large", 35), ("m6idn.32xlarge", 394))
    ),
    case(
        SRC, "should not set pods to 110 if using ENI-based pod density", "*", [("capacity.pods", "!=", 110)]
    ),
    case(
        SRC,
        "should set max-pods to user-defined value if specified",
        "*",
        [("capacity.pods", "==", 10)],
        nodeclass={K: {"maxPods": 10}},
    ),
    *(
        case(
            SRC,
            f"should set max-pods to user-defined value if specified [{label}]",
            "t3.large",
            [("capacity.pods", "==", 10), ("kube_reserved.memory", "==", memory)],
            nodeclass={K: {"maxPods": 10}, **changes},
        )
        for label, changes, memory in (
            ("al2 (latest)", _alias("al2@latest", "AL2"), "640Mi"),
            ("al2023 (latest)", _alias("al2023@latest", "AL2023"), "640Mi"),
            ("bottlerocket (latest)", _alias("bottlerocket@latest", "Bottlerocket"), "365Mi"),
            ("custom", _custom(), "640Mi"),
        )
    ),
    case(
        SRC,
        "should override max-pods value",
        "*",
        [("capacity.pods", "==", 10)],
        nodeclass={K: {"maxPods": 10}},
    ),
    *(
        case(
            SRC,
            f"should reserve ENIs when aws.reservedENIs is set and use it in max-pods calculation [{label}]",
            "t3.large",
            [("capacity.pods", "==", 24), ("kube_reserved.memory", "==", memory)],
            nodeclass={K: {}, **changes},
            settings={"reserved_enis": 1},
        )
        for label, changes, memory in (
            ("al2 (latest)", _alias("al2@latest", "AL2"), "640Mi"),
            ("al2023 (latest)", _alias("al2023@latest", "AL2023"), "640Mi"),
            ("bottlerocket (latest)", _alias("bottlerocket@latest", "Bottlerocket"), "519Mi"),
            ("custom", _custom(), "640Mi"),
        )
    ),
    case(
        SRC,
        "should reserve ENIs when aws.reservedENIs is set and not go below 0 ENIs in max-pods calculation",
        "t3.large",
        [("capacity.pods", "==", 0)],
        nodeclass={K: {}},
        settings={"reserved_enis": 1_000_000},
    ),
    case(
        SRC,
        "should override pods-per-core value",
        "*",
        # Upstream's fake types all have more ENI-limited pods than vCPUs; real ones (g4dn.16xlarge: 58 pods,
        # 64 vCPUs) do not, so the property is min(podsPerCore x vCPUs, ENI-limited pods), as types.go computes.
        [("capacity.pods", "==", lambda it: min(it.vcpus, _eni_pods(it)))],
        nodeclass={K: {"podsPerCore": 1}},
    ),
    case(
        SRC,
        "should take the minimum of pods-per-core and max-pods",
        "*",
        [("capacity.pods", "==", lambda it: min(20, 4 * it.vcpus))],
        nodeclass={K: {"podsPerCore": 4, "maxPods": 20}},
    ),
    case(
        SRC,
        "should ignore pods-per-core when using Bottlerocket AMI",
        "*",
        [("capacity.pods", "==", lambda it: _eni_pods(it))],
        nodeclass={K: {"podsPerCore": 1}, ALIAS: [{"alias": "bottlerocket@latest"}]},
    ),
    *(
        case(
            SRC,
            f"should take limited pod density to be the default pods number when pods-per-core is 0 [{name}]",
            name,
            [("capacity.pods", "==", pods)],
            nodeclass={K: {"podsPerCore": 0}},
        )
        for name, pods in (("t3.large", 35), ("m6idn.32xlarge", 394))
    ),
    *(
        case(
            SRC,
            f"shouldn't report more resources than are actually available on instances [{name}]",
            name,
            [("allocatable.memory", "<=", memory), ("allocatable.cpu", "<=", cpu)],
        )
        for name, memory, cpu in (
            ("t4g.small", "1408312Ki", "1930m"),
            ("t4g.medium", "3377496Ki", "1930m"),
            ("t4g.xlarge", "15136012Ki", "3920m"),
            ("m5.large", "7220184Ki", "1930m"),
        )
    ),
    case(
        SRC,
        "Network Interfaces: should calculate max pods according when no EFA-only interfaces used on NC 0",
        "m6idn.32xlarge",
        [("capacity.pods", "==", 394)],
        nodeclass={
            "spec.networkInterfaces": [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            ]
        },
    ),
    case(
        SRC,
        "Network Interfaces: should calculate max pods according to EFA-only interfaces used",
        "m6idn.32xlarge",
        [("capacity.pods", "==", 345), ("kube_reserved.memory", "==", f"{11 * 345 + 255}Mi")],
        nodeclass={
            "spec.networkInterfaces": [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
            ]
        },
    ),
]


def _eni_pods(it: object) -> int:
    from longshore.core.allocatable import eni_limited_pods

    return eni_limited_pods(it)  # type: ignore[arg-type]
