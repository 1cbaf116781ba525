"""From a planned claim to a launch request: the claim record, its fallback options and the node's bootstrap values.

Theory of operation: a `ClaimPlan` already lists every (type, zone, capacity type) the claim may launch as,
cheapest first. Each becomes a `LaunchOption` carrying what the launch template needs for that type: the
architecture and accelerator (they pick the AMI) and the kubelet values the engine assumed when it computed the
type's allocatable (max pods, kube-reserved), which the user data passes to the kubelet so the node reports the
room the plan counted on, and, when the claim's pods request `vpc.amazonaws.com/efa`, the type's EFA count
(the EFA interfaces its launch template attaches; Karpenter `amifamily/resolver.go` `efaCount`). The claim id is deterministic (`claim_id_for(pool, pods, generation)`), so a retried
pass that plans the same pods computes the same id and the store's conditional write makes the launch happen
once. The record carries the planned offering, so until EC2 answers, the next plan counts the claim as an
in-flight node of that type.
"""

from __future__ import annotations

from collections.abc import Mapping

from longshore.core import labels as wk
from longshore.core.allocatable import node_capacity, overhead
from longshore.core.catalog import Catalog, InstanceType
from longshore.core.claims import KubeletSettings, LaunchOption, LaunchRequest, NodeClaim, claim_id_for
from longshore.core.model import ClusterConfig
from longshore.core.scheduling import ClaimPlan

_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
EFA = "vpc.amazonaws.com/efa"


def accelerator_of(instance_type: InstanceType) -> str:
    """The AMI variant a type needs: "nvidia", "neuron" or "" (standard)."""
    if (instance_type.label(wk.INSTANCE_GPU_MANUFACTURER) or "").lower() == "nvidia":
        return "nvidia"
    if (instance_type.label(wk.INSTANCE_ACCELERATOR_MANUFACTURER) or "").lower() == "aws":
        return "neuron"
    return ""


def kubelet_settings(instance_type: InstanceType, pool_name: str, config: ClusterConfig) -> KubeletSettings:
    """The kubelet values the engine assumed for this type in this pool (max pods, kube-reserved)."""
    pool = config.pool(pool_name)
    node_class = config.node_class_of(pool)
    kubelet = pool.effective_kubelet(node_class)
    capacity = node_capacity(instance_type, kubelet, node_class, config.settings)
    spent = overhead(instance_type, kubelet, node_class, config.settings)
    return KubeletSettings(
        max_pods=capacity.get("pods") or None,
        kube_reserved=tuple(sorted(spent.kube_reserved.to_quantities().items())),
        system_reserved=kubelet.system_reserved,
        eviction_hard=kubelet.eviction_hard,
    )


def efa_interfaces(instance_type: InstanceType, pool_name: str, config: ClusterConfig) -> int:
    """The EFA devices a node of this type in this pool offers (`vpc.amazonaws.com/efa` capacity)."""
    pool = config.pool(pool_name)
    node_class = config.node_class_of(pool)
    return node_capacity(instance_type, pool.effective_kubelet(node_class), node_class, config.settings).get(
        EFA
    )


def launch_request(
    plan: ClaimPlan, catalog: Catalog, config: ClusterConfig, now: float, generation: int | str = 0
) -> LaunchRequest:
    """The launch request for one planned claim (options in the plan's cheapest-first order)."""
    claim = NodeClaim(
        id=claim_id_for(plan.nodepool, plan.pods, generation),
        nodepool=plan.nodepool,
        node_class=plan.node_class,
        requirements=plan.requirements.to_written(),
        instance_types=plan.instance_types,
        instance_type=plan.instance_type,
        zone=plan.zone,
        capacity_type=plan.capacity_type,
        price=plan.price_per_hour,
        created_at=now,
        pods=plan.pods,
        min_values_relaxed=plan.min_values_relaxed,
    )
    wants_efa = plan.requests.get(EFA) > 0
    settings: dict[str, KubeletSettings] = {}
    options: list[LaunchOption] = []
    for offering in plan.offerings:
        instance_type = catalog.get(offering.instance_type)
        if instance_type is None:
            continue
        if offering.instance_type not in settings:
            settings[offering.instance_type] = kubelet_settings(instance_type, plan.nodepool, config)
        options.append(
            LaunchOption(
                instance_type=offering.instance_type,
                zone=offering.zone,
                capacity_type=offering.capacity_type,
                price=offering.price,
                arch=_ARCH.get(instance_type.arch, instance_type.arch),
                accelerator=accelerator_of(instance_type),
                kubelet=settings[offering.instance_type],
                efa=efa_interfaces(instance_type, plan.nodepool, config) if wants_efa else 0,
                reservation_id=offering.reservation_id,
                reservation_type=offering.reservation_type,
                reservation_end=offering.reservation_end,
                reservation_interruptible=offering.reservation_interruptible,
            )
        )
    return LaunchRequest(claim=claim, options=tuple(options), labels=_claim_labels(plan))


def _claim_labels(plan: ClaimPlan) -> tuple[tuple[str, str], ...]:
    """Labels the node registers with beyond the pool's: the plan's single-valued requirements that are not
    decided by the launch itself (type, zone and capacity type come from the offering EC2 picks)."""
    decided_at_launch = {
        wk.INSTANCE_TYPE,
        wk.ZONE,
        wk.CAPACITY_TYPE,
        wk.ZONE_ID,
        wk.HOSTNAME,
        wk.CAPACITY_RESERVATION_ID,
        wk.CAPACITY_RESERVATION_TYPE,
        wk.CAPACITY_RESERVATION_INTERRUPTIBLE,
    }
    labels: Mapping[str, str] = {**plan.requirements.single_values(), **dict(plan.labels)}
    return tuple(
        sorted(
            (key, value)
            for key, value in labels.items()
            if key not in decided_at_launch and not key.startswith("karpenter.k8s.aws/instance-")
        )
    )
