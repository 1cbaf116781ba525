"""EC2 tag names Longshore writes and reads (docs/contracts.md "Resource tags"), and helpers to build them.

Theory of operation: tags are how a stateless run recognises what it owns. Instances, volumes, fleets and
launch templates carry the cluster, pool and node-class tags; instances, volumes and fleets also carry the claim
id and `Name`. `longshore.io/created-at` records the launch time on *our* clock (the simulation's clock is
virtual, EC2's LaunchTime is not), so grace periods are judged consistently. IAM conditions in the CDK stack
match on `longshore.io/cluster`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

DISCOVERY: Final = "karpenter.sh/discovery"
CLUSTER: Final = "longshore.io/cluster"
EKS_CLUSTER: Final = "eks:eks-cluster-name"
NODEPOOL: Final = "karpenter.sh/nodepool"
NODECLASS: Final = "karpenter.k8s.aws/ec2nodeclass"
NODECLAIM: Final = "karpenter.sh/nodeclaim"
NAME: Final = "Name"
CREATED_AT: Final = "longshore.io/created-at"


def kubernetes_cluster_tag(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"


def ownership_tags(
    cluster: str, nodepool: str, node_class: str, extra: Iterable[tuple[str, str]] = ()
) -> dict[str, str]:
    """Tags on everything launched for a pool: the node class's own tags, then ours (ours win)."""
    tags = dict(extra)
    tags.update(
        {
            CLUSTER: cluster,
            EKS_CLUSTER: cluster,
            kubernetes_cluster_tag(cluster): "owned",
            NODEPOOL: nodepool,
            NODECLASS: node_class,
        }
    )
    return tags


def claim_tags(
    cluster: str,
    nodepool: str,
    node_class: str,
    claim_id: str,
    created_at: float,
    extra: Iterable[tuple[str, str]] = (),
) -> dict[str, str]:
    """Tags on an instance, its volumes and its fleet."""
    tags = ownership_tags(cluster, nodepool, node_class, extra)
    tags.update({NODECLAIM: claim_id, NAME: f"{nodepool}/{claim_id}", CREATED_AT: repr(float(created_at))})
    return tags


def as_ec2(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def from_ec2(tags: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tags or ()}
