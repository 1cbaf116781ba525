"""Drift: when a node no longer matches what its pool and node class would build today.

Static hashes (Karpenter `nodepool-hash` / `ec2nodeclass-hash`): a node remembers the hash of its
pool's template and of its node class at launch. When the current hash differs, the node has drifted.
The pool hash covers what a node is built from, minus what is checked behaviourally or does not change
the node: labels, annotations, taints, startup taints, node class, expiry and termination grace period
(requirements are checked separately, against the node's labels; budgets, limits and weight are left out).
The node-class hash covers the whole class except its selector terms (subnet, security group, AMI and
capacity-reservation drift are detected from what they resolve to, not from how they are written).
Hashes are SHA-256 over canonical JSON, truncated to 16 hex digits, and carry a version prefix.
`drift_reason` adds the behavioural checks: an AMI that is no longer the resolved one, and labels the pool's
requirements no longer admit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import NodeClass, NodePool
from longshore.core.requirements import Requirements

HASH_VERSION = "v1"

_POOL_FIELDS = (
    "labels",
    "annotations",
    "taints",
    "startup_taints",
    "node_class",
    "expiry",
    "termination_grace_period_seconds",
    "kubelet",
)
_CLASS_EXCLUDED = (
    "name",
    "origin",
    "ami_selector_terms",
    "subnet_selector_terms",
    "security_group_selector_terms",
    "capacity_reservation_selector_terms",
)


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    return value


def _digest(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return f"{HASH_VERSION}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def nodepool_hash(pool: NodePool) -> str:
    # Older dialects kept the kubelet on the pool; v1 pools carry None here and the class hash covers it.
    return _digest({name: _canonical(getattr(pool, name)) for name in _POOL_FIELDS})


def nodeclass_hash(node_class: NodeClass) -> str:
    fields = {
        f.name: _canonical(getattr(node_class, f.name))
        for f in dataclasses.fields(node_class)
        if f.name not in _CLASS_EXCLUDED
    }
    return _digest(fields)


def claim_hashes(pool: NodePool, node_class: NodeClass) -> tuple[str, str]:
    """The (pool hash, node-class hash) a node claim records at launch, for drift detection later."""
    return nodepool_hash(pool), nodeclass_hash(node_class)


def drift_reason(node: ManagedNode, pool: NodePool, inp: DisruptionInput) -> str | None:
    """Why `node` has drifted from `pool` (changed hashes, a stale AMI, requirements), or None."""
    if node.nodepool_hash and node.nodepool_hash != nodepool_hash(pool):
        return f"pool {pool.name} changed since launch"
    try:
        node_class = inp.config.node_class_of(pool)
    except KeyError:
        return None
    if node.nodeclass_hash and node.nodeclass_hash != nodeclass_hash(node_class):
        return f"node class {node_class.name} changed since launch"
    images = inp.current_images.get(node_class.name)
    if images and node.image_id and node.image_id not in images:
        return f"AMI {node.image_id} is no longer the resolved AMI ({', '.join(sorted(images))})"
    required = Requirements.of(pool.requirements)
    mismatch = Requirements.from_labels(node.node.labels).incompatibility(
        required, subject=f"pool {pool.name}"
    )
    if mismatch:
        return f"labels no longer meet the pool's requirements: {mismatch}"
    return None
