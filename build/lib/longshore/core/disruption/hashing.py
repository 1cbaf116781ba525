"""Static drift hashes of node pools and node classes.

Theory of operation (Karpenter `nodepool-hash` / `ec2nodeclass-hash`): a node remembers the hash of its
pool's template and of its node class at launch. When the current hash differs, the node has drifted.
The pool hash covers what a node is built from, minus what is checked behaviourally or does not change
the node: labels, annotations, taints, startup taints, node class, expiry and termination grace period
(requirements are checked separately, against the node's labels; budgets, limits and weight are left out).
The node-class hash covers the whole class except its selector terms (subnet, security group, AMI and
capacity-reservation drift are detected from what they resolve to, not from how they are written).
Hashes are SHA-256 over canonical JSON, truncated to 16 hex digits, and carry a version prefix.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from longshore.core.model import NodeClass, NodePool

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
