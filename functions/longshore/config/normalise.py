"""Validated schema objects of any dialect -> the one normalised model (`core.model`) with v1 semantics.

Theory of operation: each function maps one document kind, following the v1alpha5 -> v1beta1 -> v1 table of
Karpenter's migration (aws/karpenter-provider-aws `website/content/en/v1.0/upgrading/v1-migration.md`), and fills Karpenter's defaults for what the document
leaves out. Where the dialects mean different things the model says so explicitly instead of pretending:

* expiry: v1alpha5 `ttlSecondsUntilExpired` and v1beta1 `disruption.expireAfter` are graceful
  (`Expiry.forceful=False`); v1 `template.spec.expireAfter` is forceful. v1alpha5 without the field never
  expires; v1beta1 and v1 default to 720h.
* emptiness: v1alpha5 `ttlSecondsAfterEmpty: N` is `WhenEmpty` + `consolidateAfter N`; `consolidation.enabled`
  is `WhenEmptyOrUnderutilized` after 0s; neither means nothing removes empty nodes (`WhenEmpty`, Never).
  v1beta1 `WhenUnderutilized` is `WhenEmptyOrUnderutilized` after 0s (after Never with `consolidateAfter: Never`).
* kubelet settings stay where the dialect put them: on the pool (v1alpha5, v1beta1) or the class (v1);
  `NodePool.effective_kubelet` resolves them.
* v1alpha5 selectors (maps) become selector terms; an AMI family without an AMI selector becomes the family's
  `<family>@latest` alias, which is exactly what v1 spells; IMDS hop limit defaults to 2 before v1 and 1 in v1.
* budgets: v1alpha5 had none, and its pools keep behaving that way: unbudgeted (`nodes: 100%`), so all
  empty nodes go when their `ttlSecondsAfterEmpty` passes, as they did. The v1 default (10%) applies to pools
  written as NodePools. (Karpenter's own conversion gave them 10%, which changed how they behave.)
* a node class without block devices gets the AMI family's default volumes (20 GiB gp3 encrypted root for
  AL2/AL2023/Ubuntu, 4 GiB + 20 GiB for Bottlerocket, 50 GiB for Windows, none for Custom), with the device
  that holds ephemeral storage marked `root_volume`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from longshore.config.durations import BUDGET, parse_duration, parse_go_duration
from longshore.config.schema import base, cluster, ec2, nodeclass, v1, v1alpha5
from longshore.config.schema import kubelet as kubelet_schema
from longshore.core.model import (
    SAVINGS_THRESHOLD_ANNOTATION,
    AmiFamily,
    BlockDevice,
    Budget,
    ConsolidationPolicy,
    Disruption,
    Expiry,
    InterruptionSettings,
    KubeletConfig,
    MetadataOptions,
    NetworkInterface,
    NodeClass,
    NodePool,
    Origin,
    Requirement,
    SavingsThreshold,
    SelectorTerm,
    Settings,
    SpotDiversity,
    Taint,
    pairs,
)
from longshore.core.resources import Limits

_GIB_DEFAULT = 20
_FAMILY_ALIAS = {family: f"{alias}@latest" for alias, family in nodeclass.ALIAS_FAMILIES.items()}


def default_block_devices(family: str) -> tuple[BlockDevice, ...]:
    """The volumes Karpenter gives a node class that names none (aws `pkg/providers/amifamily/*.go`)."""
    if family == "Custom":
        return ()
    if family == "Bottlerocket":
        return (
            BlockDevice("/dev/xvda", volume_size_gib=4, volume_type="gp3", encrypted=True),
            BlockDevice(
                "/dev/xvdb", volume_size_gib=_GIB_DEFAULT, volume_type="gp3", encrypted=True, root_volume=True
            ),
        )
    if family.startswith("Windows"):
        return (
            BlockDevice("/dev/sda1", volume_size_gib=50, volume_type="gp3", encrypted=True, root_volume=True),
        )
    device = "/dev/sda1" if family == "Ubuntu" else "/dev/xvda"
    return (
        BlockDevice(
            device, volume_size_gib=_GIB_DEFAULT, volume_type="gp3", encrypted=True, root_volume=True
        ),
    )


# --- shared pieces ------------------------------------------------------------------------------------------


def requirements(items: Iterable[base.RequirementV1alpha5]) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            key=item.key,
            operator=item.operator,  # type: ignore[arg-type]  # checked by the schema
            values=tuple(item.values),
            min_values=getattr(item, "minValues", None),
        )
        for item in items
    )


def taints(items: Iterable[base.Taint]) -> tuple[Taint, ...]:
    return tuple(Taint(key=t.key, effect=t.effect, value=t.value) for t in items)  # type: ignore[arg-type]


def kubelet(config: kubelet_schema.KubeletV1 | None) -> KubeletConfig | None:
    if config is None:
        return None
    return KubeletConfig(
        cluster_dns=tuple(config.clusterDNS),
        container_runtime=getattr(config, "containerRuntime", None),
        max_pods=config.maxPods,
        pods_per_core=config.podsPerCore,
        system_reserved=pairs(config.systemReserved),
        kube_reserved=pairs(config.kubeReserved),
        eviction_hard=pairs(config.evictionHard),
        eviction_soft=pairs(config.evictionSoft),
        eviction_soft_grace_period=pairs(config.evictionSoftGracePeriod),
        eviction_max_pod_grace_period=config.evictionMaxPodGracePeriod,
        image_gc_high_threshold_percent=config.imageGCHighThresholdPercent,
        image_gc_low_threshold_percent=config.imageGCLowThresholdPercent,
        cpu_cfs_quota=config.cpuCFSQuota,
    )


def _budgets(items: Iterable[base.BudgetV1beta1]) -> tuple[Budget, ...]:
    return tuple(
        Budget(
            nodes=item.nodes,
            schedule=item.schedule,
            duration_seconds=parse_duration(item.duration, allow_never=False, pattern=BUDGET)
            if item.duration
            else None,
            reasons=tuple(getattr(item, "reasons", ())),
        )
        for item in items
    )


def _metadata_options(options: ec2.MetadataOptions | None, dialect: str) -> MetadataOptions:
    given = options or ec2.MetadataOptions()
    return MetadataOptions(
        http_endpoint=given.httpEndpoint or "enabled",
        http_protocol_ipv6=given.httpProtocolIPv6 or "disabled",
        http_put_response_hop_limit=given.httpPutResponseHopLimit or (1 if dialect == "v1" else 2),
        http_tokens=given.httpTokens or "required",
    )


def _block_devices(
    mappings: Iterable[
        ec2.BlockDeviceMappingV1alpha5 | ec2.BlockDeviceMappingV1beta1 | ec2.BlockDeviceMappingV1
    ],
    family: str,
) -> tuple[BlockDevice, ...]:
    devices = []
    for mapping in mappings:
        ebs = mapping.ebs or ec2.BlockDevice()
        devices.append(
            BlockDevice(
                device_name=mapping.deviceName,
                volume_size_gib=ebs.volumeSize,
                volume_type=ebs.volumeType,
                encrypted=ebs.encrypted,
                delete_on_termination=ebs.deleteOnTermination,
                iops=ebs.iops,
                throughput=ebs.throughput,
                kms_key_id=ebs.kmsKeyID,
                snapshot_id=ebs.snapshotID,
                root_volume=getattr(mapping, "rootVolume", False),
                volume_initialization_rate=getattr(ebs, "volumeInitializationRate", None),
            )
        )
    return tuple(devices) or default_block_devices(family)


def _family_alias_terms(family: str) -> tuple[SelectorTerm, ...]:
    alias = _FAMILY_ALIAS.get(family)
    return (SelectorTerm(alias=alias),) if alias else ()


# --- v1alpha5 -----------------------------------------------------------------------------------------------


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _map_selector(selector: Mapping[str, str] | None) -> tuple[SelectorTerm, ...]:
    """v1alpha5 `subnetSelector`/`securityGroupSelector`: tags ANDed; `aws-ids` becomes one term per id."""
    if not selector:
        return ()
    tags = {k: v for k, v in selector.items() if k not in ("aws-ids", "aws::ids")}
    ids = _split(selector.get("aws-ids", selector.get("aws::ids", "")))
    if ids:
        return tuple(SelectorTerm(id=i, tags=pairs(tags)) for i in ids)
    return (SelectorTerm(tags=pairs(tags)),)


def _ami_selector(selector: Mapping[str, str] | None, family: str) -> tuple[SelectorTerm, ...]:
    """v1alpha5 `amiSelector` (`aws-ids`, `aws::name`, `aws::owners`, tags); absent = the family's latest."""
    if not selector:
        return _family_alias_terms(family)
    special = ("aws-ids", "aws::ids", "aws::name", "aws::owners")
    tags = pairs({k: v for k, v in selector.items() if k not in special})
    ids = _split(selector.get("aws-ids", selector.get("aws::ids", "")))
    if ids:
        return tuple(SelectorTerm(id=i, tags=tags) for i in ids)
    name = selector.get("aws::name")
    owners = _split(selector.get("aws::owners", ""))
    if owners:
        return tuple(SelectorTerm(tags=tags, name=name, owner=owner) for owner in owners)
    return (SelectorTerm(tags=tags, name=name),)


def node_class_from_provider(
    name: str,
    origin: Origin,
    provider: v1alpha5.AWSProvider,
    *,
    ami_selector: Mapping[str, str] | None = None,
    user_data: str | None = None,
    detailed_monitoring: bool = False,
) -> NodeClass:
    family = provider.amiFamily or "AL2"
    return NodeClass(
        name=name,
        origin=origin,
        ami_family=family,  # type: ignore[arg-type]  # checked by the schema
        ami_selector_terms=_ami_selector(ami_selector, family),
        subnet_selector_terms=_map_selector(provider.subnetSelector),
        security_group_selector_terms=_map_selector(provider.securityGroupSelector),
        instance_profile=provider.instanceProfile,
        user_data=user_data,
        tags=pairs(provider.tags),
        block_device_mappings=_block_devices(provider.blockDeviceMappings, family),
        metadata_options=_metadata_options(provider.metadataOptions, "v1alpha5"),
        detailed_monitoring=detailed_monitoring,
        context=provider.context,
        launch_template_name=provider.launchTemplate,
    )


def node_class_from_template(doc: v1alpha5.AWSNodeTemplate, origin: Origin) -> NodeClass:
    spec = doc.spec
    return node_class_from_provider(
        doc.metadata.name,
        origin,
        spec,
        ami_selector=spec.amiSelector,
        user_data=spec.userData,
        detailed_monitoring=spec.detailedMonitoring,
    )


UNBUDGETED = Budget(nodes="100%")  # v1alpha5 had no disruption budgets


def _threshold(annotations: Mapping[str, str]) -> SavingsThreshold | None:
    """The pool's `longshore.io/consolidation-min-savings` annotation (checked by the schema), if any."""
    value = annotations.get(SAVINGS_THRESHOLD_ANNOTATION)
    return SavingsThreshold.parse(value) if value is not None else None


def pool_from_provisioner(doc: v1alpha5.Provisioner, origin: Origin) -> tuple[NodePool, NodeClass | None]:
    """A Provisioner as a pool; an inline `provider` becomes a node class named after the Provisioner."""
    spec = doc.spec
    name = doc.metadata.name
    inline = node_class_from_provider(name, origin, spec.provider) if spec.provider is not None else None
    policy: ConsolidationPolicy
    if spec.consolidation is not None and spec.consolidation.enabled:
        policy, after = "WhenEmptyOrUnderutilized", 0
    elif spec.ttlSecondsAfterEmpty is not None:
        policy, after = "WhenEmpty", spec.ttlSecondsAfterEmpty
    else:
        policy, after = "WhenEmpty", None
    pool = NodePool(
        name=name,
        origin=origin,
        node_class=spec.providerRef.name if spec.providerRef is not None else name,
        weight=spec.weight or 0,
        labels=pairs(spec.labels),
        annotations=pairs(spec.annotations),
        requirements=requirements(spec.requirements),
        taints=taints(spec.taints),
        startup_taints=taints(spec.startupTaints),
        expiry=Expiry(after_seconds=spec.ttlSecondsUntilExpired, forceful=False),
        disruption=Disruption(
            consolidation_policy=policy,
            consolidate_after_seconds=after,
            budgets=(UNBUDGETED,),
            consolidation_threshold=_threshold(doc.metadata.annotations),
        ),
        limits=Limits.parse(spec.limits.resources) if spec.limits is not None else Limits(),
        kubelet=kubelet(spec.kubeletConfiguration),
    )
    return pool, inline


# --- v1beta1 and v1 -----------------------------------------------------------------------------------------


def _template_fields(doc: v1.NodePoolV1beta1 | v1.NodePoolV1, origin: Origin) -> dict[str, Any]:
    """The NodePool fields v1beta1 and v1 spell the same way (identity, template, weight)."""
    spec, template = doc.spec, doc.spec.template
    return {
        "name": doc.metadata.name,
        "origin": origin,
        "node_class": template.spec.nodeClassRef.name,
        "weight": spec.weight or 0,
        "labels": pairs(template.metadata.labels),
        "annotations": pairs(template.metadata.annotations),
        "requirements": requirements(template.spec.requirements),
        "taints": taints(template.spec.taints),
        "startup_taints": taints(template.spec.startupTaints),
    }


def pool_from_v1beta1(doc: v1.NodePoolV1beta1, origin: Origin) -> NodePool:
    spec, template = doc.spec, doc.spec.template
    disruption = spec.disruption
    if disruption.consolidationPolicy == "WhenUnderutilized":
        policy: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
        # `consolidateAfter: Never` is the one value v1beta1 allows here: it turns consolidation off.
        after: int | None = None if disruption.consolidateAfter == "Never" else 0
    else:
        policy, after = "WhenEmpty", parse_duration(disruption.consolidateAfter)
    return NodePool(
        **_template_fields(doc, origin),
        expiry=Expiry(after_seconds=parse_duration(disruption.expireAfter), forceful=False),
        disruption=Disruption(
            consolidation_policy=policy,
            consolidate_after_seconds=after,
            budgets=_budgets(disruption.budgets),
            consolidation_threshold=_threshold(doc.metadata.annotations),
        ),
        limits=Limits.parse(spec.limits),
        kubelet=kubelet(template.spec.kubelet),
    )


def pool_from_v1(doc: v1.NodePoolV1, origin: Origin) -> NodePool:
    spec, template = doc.spec, doc.spec.template
    disruption = spec.disruption
    grace = template.spec.terminationGracePeriod
    return NodePool(
        **_template_fields(doc, origin),
        expiry=Expiry(after_seconds=parse_duration(template.spec.expireAfter), forceful=True),
        termination_grace_period_seconds=parse_duration(grace, allow_never=False) if grace else None,
        disruption=Disruption(
            consolidation_policy=disruption.consolidationPolicy,  # type: ignore[arg-type]  # checked by the schema
            consolidate_after_seconds=parse_duration(disruption.consolidateAfter),
            budgets=_budgets(disruption.budgets),
            consolidation_threshold=_threshold(doc.metadata.annotations),
        ),
        limits=Limits.parse(spec.limits),
        replicas=spec.replicas,
    )


def _terms(items: Iterable[nodeclass._Term]) -> tuple[SelectorTerm, ...]:
    return tuple(
        SelectorTerm(
            tags=pairs(item.tags),
            id=getattr(item, "id", None),
            name=getattr(item, "name", None),
            owner=getattr(item, "owner", None) or getattr(item, "ownerID", None),
            alias=getattr(item, "alias", None),
            ssm_parameter=getattr(item, "ssmParameter", None),
            instance_match_criteria=getattr(item, "instanceMatchCriteria", None),
        )
        for item in items
    )


def node_class_from_ec2nodeclass(
    doc: nodeclass.EC2NodeClassV1 | nodeclass.EC2NodeClassV1beta1, origin: Origin, dialect: str
) -> NodeClass:
    spec = doc.spec
    terms = _terms(spec.amiSelectorTerms)
    alias = next((term.alias for term in terms if term.alias), None)
    family = spec.amiFamily or (
        nodeclass.ALIAS_FAMILIES[alias.partition("@")[0].lower()] if alias else "AL2023"
    )
    if not terms:
        terms = _family_alias_terms(family)
    v1_spec = spec if isinstance(spec, nodeclass.EC2NodeClassSpecV1) else None
    placement = v1_spec.placementGroupSelector if v1_spec else None
    return NodeClass(
        name=doc.metadata.name,
        origin=origin,
        ami_family=_family(family),
        ami_selector_terms=terms,
        subnet_selector_terms=_terms(spec.subnetSelectorTerms),
        security_group_selector_terms=_terms(spec.securityGroupSelectorTerms),
        capacity_reservation_selector_terms=_terms(v1_spec.capacityReservationSelectorTerms)
        if v1_spec
        else (),
        role=spec.role,
        instance_profile=spec.instanceProfile,
        user_data=spec.userData,
        tags=pairs(spec.tags),
        kubelet=kubelet(v1_spec.kubelet) if v1_spec else None,
        block_device_mappings=_block_devices(spec.blockDeviceMappings, family),
        instance_store_policy=spec.instanceStorePolicy,
        metadata_options=_metadata_options(spec.metadataOptions, dialect),
        detailed_monitoring=spec.detailedMonitoring,
        associate_public_ip_address=spec.associatePublicIPAddress,
        context=spec.context,
        placement_group=SelectorTerm(id=placement.id, name=placement.name) if placement else None,
        network_interfaces=tuple(
            NetworkInterface(n.networkCardIndex, n.deviceIndex, n.interfaceType)
            for n in (v1_spec.networkInterfaces if v1_spec else ())
        ),
        ip_prefix_count=v1_spec.ipPrefixCount if v1_spec else None,
        connection_tracking=pairs(
            {
                k: str(v)
                for k, v in (
                    v1_spec.connectionTracking.model_dump() if v1_spec and v1_spec.connectionTracking else {}
                ).items()
                if v is not None
            }
        ),
        cpu_options=pairs(
            {
                k: str(v)
                for k, v in (
                    v1_spec.cpuOptions.model_dump() if v1_spec and v1_spec.cpuOptions else {}
                ).items()
                if v is not None
            }
        ),
    )


def _family(family: str) -> AmiFamily:
    return family  # type: ignore[return-value]  # checked by the schema


# --- cluster document ---------------------------------------------------------------------------------------


def settings(given: cluster.GlobalSettings) -> Settings:
    return Settings(
        vm_memory_overhead_percent=given.vmMemoryOverheadPercent,
        reserved_enis=given.reservedENIs,
        batch_idle_seconds=parse_go_duration(given.batchIdleDuration),
        batch_max_seconds=parse_go_duration(given.batchMaxDuration),
        default_instance_profile=given.defaultInstanceProfile,
        isolated_vpc=given.isolatedVPC,
        enable_eni_limited_pod_density=given.enableENILimitedPodDensity,
        tags=pairs(given.tags),
        cluster_endpoint=given.clusterEndpoint,
        assume_role_arn=given.assumeRoleARN,
        enable_pod_eni=given.enablePodENI,
        drift_enabled=given.driftEnabled,
        preference_policy=given.preferencePolicy,  # type: ignore[arg-type]  # checked by the schema
        min_values_policy=given.minValuesPolicy,  # type: ignore[arg-type]  # checked by the schema
        max_cost_per_hour=given.maxCostPerHour,
        spot_to_spot_consolidation=given.featureGates.spotToSpotConsolidation,
        spot_diversity=spot_diversity(given.spotDiversity),
    )


def spot_diversity(given: cluster.SpotDiversity) -> SpotDiversity:
    """`enabled: false` is a pool share of 1, which the rule reads as off."""
    share = given.maxPoolShare if given.enabled else 1.0
    return SpotDiversity(pool_share=share, min_claims=given.minClaims, max_cost=given.maxCostIncrease)


def interruption(given: cluster.Interruption) -> InterruptionSettings:
    return InterruptionSettings(
        queue_name=given.queueName,
        rebalance_default=given.rebalance,  # type: ignore[arg-type]  # checked by the schema
        max_receive_count=given.maxReceiveCount,
    )
