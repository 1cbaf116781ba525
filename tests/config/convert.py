"""Test helpers: a mechanical v1alpha5 -> v1 manifest converter, and the "same meaning" view of a model.

The converter does what a careful user (or `karpenter-convert`) does by hand, spelling out in v1 whatever the
v1alpha5 defaults meant: `expireAfter: Never` when there was no `ttlSecondsUntilExpired`, the IMDS hop limit 2,
the AMI family's `@latest` alias, `consolidateAfter: Never` when nothing removed empty nodes, kubelet settings
moved to the node class, a volume size in Gi.

`semantic_view` removes from a model exactly the differences that are *intended* between dialects:
`Origin` (which file, line and apiVersion a pool came from), `Expiry.forceful` (graceful before v1, forceful in
v1), where the kubelet settings are kept (compared as each pool's effective kubelet instead) and the kubelet
`containerRuntime` (v1 removed it: containerd is the only runtime). Everything else must be equal.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from longshore.core.model import ClusterConfig, Expiry, NodeClass, NodePool, Origin

NEUTRAL = Origin(api_version="", kind="")


def semantic_view(config: ClusterConfig) -> tuple[tuple[tuple[NodePool, Any], ...], tuple[NodeClass, ...]]:
    """(pools with their effective kubelet, classes) with the intended dialect differences removed."""
    pools = []
    for pool in config.node_pools:
        kubelet = dataclasses.replace(
            pool.effective_kubelet(config.node_class_of(pool)), container_runtime=None
        )
        neutral = dataclasses.replace(
            pool, origin=NEUTRAL, expiry=Expiry(pool.expiry.after_seconds, forceful=True), kubelet=None
        )
        pools.append((neutral, kubelet))
    classes = tuple(dataclasses.replace(c, origin=NEUTRAL, kubelet=None) for c in config.node_classes)
    return tuple(sorted(pools, key=lambda p: p[0].name)), tuple(sorted(classes, key=lambda c: c.name))


_ALIASES = {
    "AL2": "al2",
    "Bottlerocket": "bottlerocket",
    "Windows2019": "windows2019",
    "Windows2022": "windows2022",
}


def _selector_terms(selector: dict[str, str]) -> list[dict[str, Any]]:
    ids = selector.get("aws-ids")
    if ids:
        return [{"id": i.strip()} for i in ids.split(",")]
    return [{"tags": dict(selector)}]


def _kubelet(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "containerRuntime"}


def convert_documents(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """v1alpha5 Provisioner/AWSNodeTemplate documents -> v1 NodePool/EC2NodeClass documents."""
    kubelets: dict[str, dict[str, Any]] = {}
    converted: list[dict[str, Any]] = []
    for doc in documents:
        if doc["kind"] != "Provisioner":
            continue
        spec = doc["spec"]
        ref = spec["providerRef"]["name"]
        if "kubeletConfiguration" in spec:
            kubelets[ref] = _kubelet(spec["kubeletConfiguration"])
        template_spec: dict[str, Any] = {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": ref},
            "expireAfter": f"{spec['ttlSecondsUntilExpired']}s"
            if "ttlSecondsUntilExpired" in spec
            else "Never",
        }
        for name in ("requirements", "taints", "startupTaints"):
            if name in spec:
                template_spec[name] = spec[name]
        metadata = {k: spec[k] for k in ("labels", "annotations") if k in spec}
        if spec.get("consolidation", {}).get("enabled"):
            disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
        elif "ttlSecondsAfterEmpty" in spec:
            disruption = {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": f"{spec['ttlSecondsAfterEmpty']}s",
            }
        else:
            disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}
        disruption["budgets"] = [{"nodes": "100%"}]  # v1alpha5 had no budgets
        pool_spec: dict[str, Any] = {
            "template": {"metadata": metadata, "spec": template_spec},
            "disruption": disruption,
        }
        if "weight" in spec:
            pool_spec["weight"] = spec["weight"]
        if "limits" in spec:
            pool_spec["limits"] = spec["limits"]["resources"]
        converted.append(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": doc["metadata"],
                "spec": pool_spec,
            }
        )
    for doc in documents:
        if doc["kind"] != "AWSNodeTemplate":
            continue
        spec = doc["spec"]
        family = spec.get("amiFamily", "AL2")
        class_spec: dict[str, Any] = {
            "subnetSelectorTerms": _selector_terms(spec["subnetSelector"]),
            "securityGroupSelectorTerms": _selector_terms(spec["securityGroupSelector"]),
            "metadataOptions": {"httpPutResponseHopLimit": 2, **spec.get("metadataOptions", {})},
        }
        if "amiSelector" in spec:
            class_spec["amiFamily"] = family
            class_spec["amiSelectorTerms"] = _selector_terms(spec["amiSelector"])
        else:
            class_spec["amiSelectorTerms"] = [{"alias": f"{_ALIASES[family]}@latest"}]
        class_spec["instanceProfile"] = spec.get("instanceProfile", "DefaultInstanceProfile")
        for name in ("userData", "tags", "detailedMonitoring", "context"):
            if name in spec:
                class_spec[name] = spec[name]
        if "blockDeviceMappings" in spec:
            mappings = []
            for mapping in spec["blockDeviceMappings"]:
                ebs = dict(mapping.get("ebs", {}))
                if isinstance(ebs.get("volumeSize"), int):
                    ebs["volumeSize"] = f"{ebs['volumeSize']}Gi"
                mappings.append({**mapping, "ebs": ebs})
            class_spec["blockDeviceMappings"] = mappings
        if doc["metadata"]["name"] in kubelets:
            class_spec["kubelet"] = kubelets[doc["metadata"]["name"]]
        converted.append(
            {
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": doc["metadata"],
                "spec": class_spec,
            }
        )
    return converted
