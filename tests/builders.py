"""Test builders: pods, nodes, pools, node classes, instance types and catalogs, with sensible defaults.

Theory of operation: tests say only what matters to them (`pod("web", cpu="2")`, `pool("gpu", taints=[...])`)
and the builders fill in the rest. Pods are built through `core.pod_manifest.pod_from_manifest` from a Kubernetes-
shaped dict, so tests exercise the same parser production uses. Catalogs come in two kinds:

* `instance_type(...)` / `catalog(...)`: synthetic types with exactly the figures a test names;
* `real_catalog(region, names)`: EC2's real shapes and zone offerings as moto ships them (the same
  `DescribeInstanceTypes` data the adapter reads), priced from `longshore/data/prices.json`, assembled by the
  production `adapters.aws.instance_types.build_catalog`, with no AWS calls (fast enough for unit tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from longshore.core import labels as wk
from longshore.core.catalog import Catalog, InstanceType, Offering, make_instance_type
from longshore.core.model import NodeClass, NodePool, Origin, Requirement, Taint
from longshore.core.pod_manifest import pod_from_manifest
from longshore.core.pods import Pod
from longshore.core.resources import Limits, Resources
from longshore.core.scheduling.inputs import ExistingNode, SchedulingInput

V1_POOL = Origin("karpenter.sh/v1", "NodePool")
V1_CLASS = Origin("karpenter.k8s.aws/v1", "EC2NodeClass")


# --- pods ---------------------------------------------------------------------------------------------------


def pod_manifest(
    name: str,
    *,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    extra_requests: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    spread: Sequence[Mapping[str, Any]] = (),
    host_ports: Sequence[int] = (),
    node_name: str = "",
    owner: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A Kubernetes Pod dict with one container requesting `cpu` and `memory`."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra_requests or {})
    container: dict[str, Any] = {"name": "main", "image": "pause", "resources": {"requests": requests}}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if labels:
        metadata["labels"] = dict(labels)
    if owner:
        metadata["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    spec: dict[str, Any] = {"containers": [container]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        spec["affinity"] = dict(affinity)
    if spread:
        spec["topologySpreadConstraints"] = [dict(s) for s in spread]
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod(name: str, **options: Any) -> Pod:
    """A `Pod` (see `pod_manifest` for the options)."""
    return pod_from_manifest(pod_manifest(name, **options))


def replicas(prefix: str, count: int, **options: Any) -> tuple[Pod, ...]:
    """`count` identical pods named `<prefix>-0` ... (labels `app=<prefix>` unless given)."""
    options.setdefault("labels", {"app": prefix})
    return tuple(pod(f"{prefix}-{i}", **options) for i in range(count))


def zone_spread(
    app: str, max_skew: int = 1, *, key: str = wk.ZONE, hard: bool = True, min_domains: int | None = None
) -> dict[str, Any]:
    spread: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    if min_domains is not None:
        spread["minDomains"] = min_domains
    return spread


def anti_affinity(app: str, key: str = wk.HOSTNAME) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]
        }
    }


def pod_affinity(app: str, key: str = wk.ZONE) -> dict[str, Any]:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
            ]
        }
    }


def node_affinity(
    *terms: Sequence[Mapping[str, Any]], preferred: Sequence[tuple[int, Sequence[Mapping[str, Any]]]] = ()
) -> dict[str, Any]:
    """Required ORed terms (each a list of matchExpressions) and preferred (weight, expressions) terms."""
    section: dict[str, Any] = {}
    if terms:
        section["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in term]} for term in terms]
        }
    if preferred:
        section["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": weight, "preference": {"matchExpressions": [dict(e) for e in term]}}
            for weight, term in preferred
        ]
    return {"nodeAffinity": section}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return (
        {"key": key, "operator": operator, "values": list(values)}
        if values
        else {"key": key, "operator": operator}
    )


def daemonset(
    name: str,
    *,
    cpu: str = "100m",
    memory: str = "128Mi",
    tolerate_all: bool = True,
    node_selector: Mapping[str, str] | None = None,
) -> Pod:
    """The pod template of a DaemonSet (owner kind DaemonSet)."""
    tolerations = [{"operator": "Exists"}] if tolerate_all else []
    return pod(
        name,
        cpu=cpu,
        memory=memory,
        namespace="kube-system",
        tolerations=tolerations,
        node_selector=node_selector,
        owner=("DaemonSet", name),
    )


# --- pools and classes -----------------------------------------------------------------------------------


def req(key: str, operator: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement(key, operator, tuple(values), min_values)  # type: ignore[arg-type]


def node_class(name: str = "default", **fields: Any) -> NodeClass:
    return NodeClass(name=name, origin=V1_CLASS, **fields)


def ec2_node_class_yaml(name: str = "default", cluster: str = "demo") -> str:
    """A minimal valid `karpenter.k8s.aws/v1` EC2NodeClass as one YAML document (AL2023, the node role and
    discovery tags of `cluster`), for tests that write Karpenter manifests as text."""
    return f"""\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {{name: {name}}}
spec:
  role: KarpenterNodeRole-{cluster}
  amiSelectorTerms: [{{alias: al2023@latest}}]
  subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: {cluster}}}}}]
  securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: {cluster}}}}}]
"""


def pool(
    name: str = "default",
    *,
    requirements: Iterable[Requirement] = (),
    weight: int = 0,
    taints: Iterable[Taint] = (),
    startup_taints: Iterable[Taint] = (),
    labels: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    node_class_name: str = "default",
) -> NodePool:
    return NodePool(
        name=name,
        origin=V1_POOL,
        node_class=node_class_name,
        weight=weight,
        labels=tuple(sorted((labels or {}).items())),
        requirements=tuple(requirements),
        taints=tuple(taints),
        startup_taints=tuple(startup_taints),
        limits=Limits.parse(limits or {}),
    )


# --- instance types and catalogs -------------------------------------------------------------------------


def instance_type(
    name: str,
    *,
    vcpus: int = 2,
    memory_gib: float = 4,
    price: float = 0.1,
    zones: Sequence[str] = ("us-east-1a",),
    spot_price: float | None = None,
    arch: str = "amd64",
    enis: int = 3,
    ipv4_per_eni: int = 10,
    extended: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
) -> InstanceType:
    """A synthetic type with an on-demand offering (and a spot one if `spot_price`) in every zone."""
    offerings = [Offering(z, "on-demand", price) for z in zones]
    if spot_price is not None:
        offerings += [Offering(z, "spot", spot_price) for z in zones]
    return make_instance_type(
        name,
        vcpus=vcpus,
        memory_mib=int(memory_gib * 1024),
        offerings=offerings,
        arch=arch,
        enis=enis,
        ipv4_per_eni=ipv4_per_eni,
        extra_labels=labels,
        extended=extended,
    )


def catalog(*types: InstanceType, region: str = "us-east-1") -> Catalog:
    return Catalog(tuple(types), region=region)


def real_catalog(region: str = "us-east-1", names: tuple[str, ...] | None = None) -> Catalog:
    """EC2's real shapes and zones for `region` (the package's `longshore/data/ec2/`), priced from the shipped table."""
    from longshore.adapters.aws.instance_types import offline_catalog

    return offline_catalog(region, names)


# --- existing nodes -----------------------------------------------------------------------------------------


def node(
    name: str,
    *,
    allocatable: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    zone: str = "us-east-1a",
    pool_name: str | None = "default",
    instance_type_name: str = "m5.xlarge",
    taints: Iterable[Taint] = (),
    pods: Iterable[Pod] = (),
    in_flight: bool = False,
    initialized: bool = True,
) -> ExistingNode:
    all_labels = {
        wk.ZONE: zone,
        wk.INSTANCE_TYPE: instance_type_name,
        wk.HOSTNAME: name,
        wk.ARCH: "amd64",
        wk.OS: "linux",
        wk.CAPACITY_TYPE: "on-demand",
    }
    if pool_name:
        all_labels[wk.NODEPOOL] = pool_name
    all_labels.update(labels or {})
    return ExistingNode(
        name=name,
        labels=tuple(sorted(all_labels.items())),
        allocatable=Resources.parse(allocatable or {"cpu": "3920m", "memory": "14Gi", "pods": "58"}),
        taints=tuple(taints),
        pods=tuple(pods),
        in_flight=in_flight,
        initialized=initialized,
    )


def scheduling_input(
    pods: Iterable[Pod],
    pools: Iterable[NodePool],
    the_catalog: Catalog,
    *,
    node_classes: Iterable[NodeClass] = (),
    **fields: Any,
) -> SchedulingInput:
    pools = tuple(pools)
    classes = tuple(node_classes) or tuple(node_class(name) for name in sorted({p.node_class for p in pools}))
    return SchedulingInput(pods=tuple(pods), pools=pools, node_classes=classes, catalog=the_catalog, **fields)


def karpenter_fixture(*parts: str) -> Path:
    """A file under `tests/fixtures/karpenter/` (the seed manifests and workloads, kept in this repository)."""
    return Path(__file__).resolve().parent / "fixtures" / "karpenter" / Path(*parts)
