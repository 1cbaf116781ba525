"""Provisioning, after kubernetes-sigs/karpenter `pkg/controllers/provisioning/suite_test.go` (v1.14.1):
limits, DaemonSet overhead, labels and taints, init/sidecar containers, multiple NodePools.

Batching, metrics, NodeClaim object shape and volume topology are exercised by other Longshore suites (the
provisioner service and the simulation); the cases here are the ones whose outcome a scheduling plan shows.
"""

from __future__ import annotations

from typing import Any

from tests.builders import expr, node_affinity
from tests.conformance.model import CORE, Source
from tests.conformance.scheduling import case as _case
from tests.conformance.scheduling import node, pod, pods, pool

SRC = Source(CORE, "pkg/controllers/provisioning/suite_test.go")
ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"
IT = "node.kubernetes.io/instance-type"
CPU = "karpenter.k8s.aws/instance-cpu"
HOST = "kubernetes.io/hostname"
OK = {"scheduled": "all"}
NO = {"unschedulable": "all"}


def case(it: str, **data: Any) -> object:
    return _case(SRC, it, **data)


def daemon(name: str, cpu: str = "2", memory: str = "1Gi", **options: Any) -> dict[str, Any]:
    options.setdefault("tolerations", [{"operator": "Exists"}])
    return pod(name, cpu=cpu, memory=memory, namespace="kube-system", owner=("DaemonSet", name), **options)


def anti(app: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}
            ]
        }
    }


SIDECAR = {"restartPolicy": "Always"}

CASES = [
    case("should provision nodes", pods=[pod("p")], expect={**OK, "claims": 1}),
    case("Should provision nodes for multiple pods", pods=pods("p", 2), expect={**OK, "claims": 1}),
    case(
        "should provision nodes for pods with supported node selectors",
        pools=[
            pool(
                labels={"test-key": "test-value"}, requirements=[expr(ZONE, "In", "us-east-1a", "us-east-1b")]
            )
        ],
        pods=[
            pod("ok-selector", node_selector={"test-key": "test-value"}),
            pod("ok-zone", node_selector={ZONE: "us-east-1b"}),
            pod("bad-value", node_selector={"test-key": "other"}),
            pod("bad-zone", node_selector={ZONE: "us-east-1c"}),
            pod("unknown-key", node_selector={"unknown": "x"}),
        ],
        expect={
            "scheduled": ["ok-selector", "ok-zone"],
            "unschedulable": ["bad-value", "bad-zone", "unknown-key"],
        },
    ),
    case(
        "should provision nodes for pods with supported node affinities",
        pools=[pool(requirements=[expr(ZONE, "In", "us-east-1a", "us-east-1b")])],
        pods=[
            pod("in", affinity=node_affinity([expr(ZONE, "In", "us-east-1b")])),
            pod("notin", affinity=node_affinity([expr(ZONE, "NotIn", "us-east-1a")])),
            pod("outside", affinity=node_affinity([expr(ZONE, "In", "us-east-1c")])),
        ],
        expect={
            "scheduled": ["in", "notin"],
            "unschedulable": ["outside"],
            "labels": {"notin": {ZONE: "us-east-1b"}},
        },
    ),
    case(
        "should provision nodes for accelerators",
        pods=[
            pod("nvidia", extra_requests={"nvidia.com/gpu": "1"}),
            pod("neuron", extra_requests={"aws.amazon.com/neuron": "1"}),
        ],
        expect={**OK, "labels": {"nvidia": {"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}}},
    ),
    case(
        "should provision multiple nodes when maxPods is set",
        nodeclass={"kubelet": {"maxPods": 1}},
        pods=pods("p", 3),
        expect={**OK, "claims": 3},
    ),
    case(
        "should schedule all pods on one inflight node when node is in deleting state",
        nodes=[node("deleting", in_flight=True, initialized=False, deleting=True)],
        pods=pods("p", 5, cpu="10m"),
        expect={**OK, "not_labels": {f"p-{i}": {HOST: ["deleting"]} for i in range(5)}},
    ),
    case(
        "should schedule based on the max resource requests of containers and initContainers with sidecar containers when initcontainer comes first",
        pods=[
            pod(
                "p",
                cpu="1",
                manifest={
                    "spec": {
                        "initContainers": [
                            {"name": "init", "image": "x", "resources": {"requests": {"cpu": "6"}}},
                            {
                                "name": "sidecar",
                                "image": "x",
                                **SIDECAR,
                                "resources": {"requests": {"cpu": "1"}},
                            },
                        ]
                    }
                },
            )
        ],
        # max(init 6, sidecar 1 + app 1) = 6 vCPUs
        expect={**OK, "labels": {"p": {CPU: ">6"}}},
    ),
    case(
        "should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are smaller than container resources",
        pods=[
            pod(
                "p",
                cpu="5",
                manifest={
                    "spec": {
                        "initContainers": [
                            {
                                "name": "sidecar",
                                "image": "x",
                                **SIDECAR,
                                "resources": {"requests": {"cpu": "2"}},
                            },
                            {"name": "init", "image": "x", "resources": {"requests": {"cpu": "1"}}},
                        ]
                    }
                },
            )
        ],
        # sidecar 2 + app 5 = 7 vCPUs
        expect={**OK, "labels": {"p": {CPU: ">7"}}},
    ),
    case(
        "should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are bigger than container resources",
        pods=[
            pod(
                "p",
                cpu="1",
                manifest={
                    "spec": {
                        "initContainers": [
                            {
                                "name": "sidecar",
                                "image": "x",
                                **SIDECAR,
                                "resources": {"requests": {"cpu": "2"}},
                            },
                            {"name": "init", "image": "x", "resources": {"requests": {"cpu": "6"}}},
                        ]
                    }
                },
            )
        ],
        # sidecar 2 + init 6 = 8 vCPUs while the init container runs
        expect={**OK, "labels": {"p": {CPU: ">8"}}},
    ),
    case(
        "should schedule based on the pod level resources requests",
        pods=[pod("p", cpu="1", manifest={"spec": {"resources": {"requests": {"cpu": "6"}}}})],
        expect=OK,
        difference="pod-level resources (spec.resources, Kubernetes PodLevelResources) are not read; the "
        "containers' requests size the pod",
    ),
    # --- Resource Limits ----------------------------------------------------------------------------------------
    case(
        "Resource Limits: should not schedule when limits are exceeded",
        pools=[pool(limits={"cpu": "20"})],
        nodes=[node("big", allocatable={"cpu": "100", "memory": "400Gi", "pods": "0"})],
        pods=[pod("p")],
        expect=NO,
    ),
    case(
        "Resource Limits: should not schedule when limits are exceeded [limits.cpu: 0, a frozen pool]",
        pools=[pool(limits={"cpu": "0"})],
        pods=[pod("p")],
        expect=NO,
    ),
    case(
        "Resource Limits: should schedule if limits would be met",
        pools=[pool(limits={"cpu": "2"})],
        pods=[pod("p", cpu="1.75")],
        expect={**OK, "labels": {"p": {CPU: "2"}}},
    ),
    case(
        "Resource Limits: should schedule if limits would be met [every fallback type fits the limit]",
        pools=[pool(limits={"cpu": "2"})],
        pods=[pod("p", cpu="1.75")],
        expect={**OK, "max_vcpus": {"p": 2}},
    ),
    case(
        "Resource Limits: should partially schedule if limits would be exceeded",
        pools=[pool(limits={"cpu": "3"})],
        pods=pods("foo", 2, cpu="1.5", affinity=anti("foo")),
        expect={"claims": 1},
    ),
    case(
        "Resource Limits: should not schedule if limits would be exceeded",
        pools=[pool(limits={"cpu": "2"})],
        pods=[pod("p", cpu="2.1")],
        expect=NO,
    ),
    case(
        "Resource Limits: should not schedule if limits would be exceeded (GPU)",
        pools=[pool(limits={"nvidia.com/gpu": "1"})],
        pods=[pod("p", extra_requests={"nvidia.com/gpu": "2"})],
        expect=NO,
    ),
    case(
        "Resource Limits: should not schedule to a nodepool after a scheduling round if limits would be exceeded",
        pools=[pool(limits={"cpu": "2"})],
        nodes=[node("first", allocatable={"cpu": "2", "memory": "8Gi", "pods": "0"})],
        pods=[pod("p", cpu="1.5")],
        expect=NO,
    ),
    case(
        "Resource Limits: should not schedule if limits would be exceeded (node)",
        pools=[pool(limits={"nodes": "1"})],
        pods=pods("foo", 2, affinity=anti("foo")),
        expect={"claims": 1},
    ),
    # --- Daemonsets ---------------------------------------------------------------------------------------------
    case(
        "Daemonsets: should account for daemonsets",
        pools=[pool(requirements=[expr(IT, "In", "m5.large", "m5.xlarge")])],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi")],
        pods=[pod("p", cpu="1", memory="1Gi")],
        # m5.large keeps 1930m: the pod (1) and the DaemonSet (1) need m5.xlarge
        expect={**OK, "labels": {"p": {IT: "m5.xlarge"}}},
    ),
    case(
        "Daemonsets: should account for daemonset hostports",
        daemonsets=[daemon("ds", cpu="100m", memory="64Mi", host_ports=[8080])],
        pods=[pod("p", host_ports=[8080])],
        expect=NO,
    ),
    case(
        "Daemonsets: should account for daemonsets (with startup taint)",
        pools=[
            pool(
                requirements=[expr(IT, "In", "m5.large", "m5.xlarge")],
                startupTaints=[{"key": "foo.com/taint", "effect": "NoSchedule"}],
            )
        ],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi")],
        pods=[pod("p", cpu="1", memory="1Gi")],
        expect={**OK, "labels": {"p": {IT: "m5.xlarge"}}},
    ),
    case(
        "Daemonsets: should not schedule if daemonset overhead is too large",
        daemonsets=[daemon("ds", cpu="10000", memory="10000Gi")],
        pods=[pod("p")],
        expect=OK,
        difference="a DaemonSet that fits no instance type is left out of the overhead instead of blocking every pod",
    ),
    case(
        "Daemonsets: should not schedule if resource requests are not defined and limits (requests) are too large",
        pods=[
            pod(
                "p",
                manifest={
                    "spec": {
                        "containers": [
                            {"name": "main", "image": "x", "resources": {"limits": {"cpu": "10000"}}}
                        ]
                    }
                },
            )
        ],
        expect=NO,
    ),
    case(
        "Daemonsets: should schedule based on the max resource requests of containers and initContainers",
        pools=[pool(requirements=[expr(IT, "In", "m5.large", "m5.xlarge")])],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi")],
        pods=[
            pod(
                "p",
                cpu="1",
                manifest={
                    "spec": {
                        "initContainers": [
                            {"name": "i", "image": "x", "resources": {"requests": {"cpu": "2"}}}
                        ]
                    }
                },
            )
        ],
        expect={**OK, "labels": {"p": {IT: "m5.xlarge"}}},
    ),
    case(
        "Daemonsets: should not schedule if combined max resources are too large for any node",
        daemonsets=[daemon("ds", cpu="1", memory="1Gi")],
        pods=[
            pod(
                "p",
                manifest={
                    "spec": {
                        "initContainers": [
                            {"name": "i", "image": "x", "resources": {"requests": {"cpu": "10000"}}}
                        ]
                    }
                },
            )
        ],
        expect=NO,
    ),
    case(
        "Daemonsets: should be able to schedule pods if resource requests and limits are not defined",
        daemonsets=[daemon("ds", cpu="1", memory="1Gi")],
        pods=[pod("p")],
        expect=OK,
    ),
    case(
        "Daemonsets: should ignore daemonsets without matching tolerations",
        pools=[
            pool(
                requirements=[expr(IT, "In", "m5.large", "m5.xlarge")],
                taints=[{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
            )
        ],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi", tolerations=[])],
        pods=[pod("p", cpu="1", tolerations=[{"key": "foo", "operator": "Exists"}])],
        expect={**OK, "labels": {"p": {IT: "m5.large"}}},
    ),
    case(
        "Daemonsets: should account for daemonsets with a custom label nodeSelector that matches the nodepool",
        pools=[pool(labels={"foo": "bar"}, requirements=[expr(IT, "In", "m5.large", "m5.xlarge")])],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi", node_selector={"foo": "bar"})],
        pods=[pod("p", cpu="1")],
        expect={**OK, "labels": {"p": {IT: "m5.xlarge"}}},
    ),
    case(
        "Daemonsets: should filter out daemonsets based on instance type requirements",
        pools=[pool(requirements=[expr(IT, "In", "m5.large", "m5.xlarge")])],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi", node_selector={IT: "m5.xlarge"})],
        pods=[pod("p", cpu="1")],
        expect={**OK, "labels": {"p": {IT: "m5.large"}}},
    ),
    case(
        "Daemonsets: should account daemonsets with NotIn operator and unspecified key",
        pools=[pool(requirements=[expr(IT, "In", "m5.large", "m5.xlarge")])],
        daemonsets=[
            daemon("ds", cpu="1", memory="1Gi", affinity=node_affinity([expr("foo", "NotIn", "bar")]))
        ],
        pods=[pod("p", cpu="1")],
        expect={**OK, "labels": {"p": {IT: "m5.xlarge"}}},
    ),
    case(
        "Daemonsets: should consider a daemonset schedulable with a PreferNoSchedule taint",
        pools=[
            pool(
                requirements=[expr(IT, "In", "m5.large", "m5.xlarge")],
                taints=[{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}],
            )
        ],
        daemonsets=[daemon("ds", cpu="1", memory="1Gi", tolerations=[])],
        pods=[pod("p", cpu="1")],
        expect={**OK, "labels": {"p": {IT: "m5.xlarge"}}},
    ),
    # --- Labels and Taints ------------------------------------------------------------------------------------
    case(
        "Labels: should label nodes",
        pools=[
            pool(
                labels={"test-key-1": "test-value-1"},
                requirements=[
                    expr("test-key-2", "In", "test-value-2"),
                    expr("test-key-3", "NotIn", "test-value-3"),
                ],
            )
        ],
        pods=[pod("p")],
        expect={
            **OK,
            "labels": {
                "p": {
                    "test-key-1": "test-value-1",
                    "test-key-2": "test-value-2",
                    "test-key-3": None,
                    "karpenter.sh/nodepool": "default",
                }
            },
        },
    ),
    case(
        "Labels: should label nodes with labels in the kubernetes domains",
        pools=[pool(labels={"kubernetes.io/team": "a", "k8s.io/team": "b"})],
        pods=[pod("p")],
        expect={**OK, "labels": {"p": {"kubernetes.io/team": "a", "k8s.io/team": "b"}}},
    ),
    case(
        "Labels: should label nodes with labels in the subdomain from kubernetes domains",
        pools=[pool(labels={"subdomain.kubernetes.io/team": "a", "subdomain.k8s.io/team": "b"})],
        pods=[pod("p")],
        expect={**OK, "labels": {"p": {"subdomain.kubernetes.io/team": "a", "subdomain.k8s.io/team": "b"}}},
    ),
    case(
        "Taints: should schedule pods that tolerate taints",
        pools=[pool(taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])],
        pods=[
            pod(
                "equal",
                tolerations=[
                    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
                ],
            ),
            pod(
                "exists",
                tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            ),
            pod("no-effect", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}]),
            pod("everything", tolerations=[{"operator": "Exists"}]),
        ],
        expect=OK,
    ),
    # --- NodeClaim creation -------------------------------------------------------------------------------------
    case(
        "NodeClaim Creation: should create a nodeclaim request restricting instance types on architecture",
        pools=[pool(requirements=[expr(ARCH, "In", "arm64")])],
        pods=[pod("p")],
        expect={**OK, "types": {"p": "arm64"}},
    ),
    case(
        "NodeClaim Creation: should create a nodeclaim request restricting instance types based on pod resource requests",
        pods=[pod("p", cpu="15")],
        expect={**OK, "types": {"p": "cpu>15"}},
    ),
    # --- Multiple NodePools ---------------------------------------------------------------------------------------
    case(
        "Multiple NodePools: should schedule to an explicitly selected NodePool",
        pools=[pool("default"), pool("target")],
        pods=[pod("p", node_selector={"karpenter.sh/nodepool": "target"})],
        expect={**OK, "labels": {"p": {"karpenter.sh/nodepool": "target"}}},
    ),
    case(
        "Multiple NodePools: should schedule to a NodePool by labels",
        pools=[pool("default"), pool("target", labels={"foo": "bar"})],
        pods=[pod("p", node_selector={"foo": "bar"})],
        expect={**OK, "labels": {"p": {"karpenter.sh/nodepool": "target"}}},
    ),
    case(
        "Multiple NodePools: Weighted NodePools: should schedule to the nodepool with the highest priority always",
        pools=[pool("light", weight=10), pool("heavy", weight=100), pool("none")],
        pods=[pod("p")],
        expect={**OK, "labels": {"p": {"karpenter.sh/nodepool": "heavy"}}},
    ),
    case(
        "Multiple NodePools: should not match NodePool with PreferNoSchedule taint when other NodePool match",
        pools=[
            pool(
                "tainted", weight=100, taints=[{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}]
            ),
            pool("plain"),
        ],
        pods=[pod("p")],
        expect={**OK, "labels": {"p": {"karpenter.sh/nodepool": "plain"}}},
    ),
    case(
        "Multiple NodePools: Weighted NodePools: should schedule to explicitly selected nodepool even if other nodePools are higher priority",
        pools=[pool("heavy", weight=100), pool("target", weight=1)],
        pods=[pod("p", node_selector={"karpenter.sh/nodepool": "target"})],
        expect={**OK, "labels": {"p": {"karpenter.sh/nodepool": "target"}}},
    ),
    case(
        "Multiple NodePools: should not create NodeClaims for StaticNodePool",
        pools=[pool("static", replicas=2)],
        pods=[pod("p")],
        expect=NO,
    ),
    case(
        "Multiple NodePools: should still provision dynamic NodeClaims when there are both Static and Dynamic NodePools",
        pools=[pool("static", replicas=2), pool("dynamic")],
        pods=[pod("p")],
        expect={**OK, "labels": {"p": {"karpenter.sh/nodepool": "dynamic"}}},
    ),
]
