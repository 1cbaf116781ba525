"""A Node object as the lifecycle pass reads it (`core.claims.NodeObservation`), and the cache that makes a
warm pass read only the nodes that changed.

Rules:

- An observation is the node's name, providerID, readiness, taints, labels (sorted), whether it is being
  deleted (`deletionTimestamp`) and its finalizers (`services.snapshot` reads readiness, taints and the
  providerID); nothing else of the node is read, and the node is never changed.
- `observe_all` answers one observation per node, in the order listed. It keeps the last call's observations
  by object identity and reuses one only for the very same object (the watch cache hands back the same dict
  for a node that did not change, and listed objects are read-only): a node that changed is a new object and
  is observed afresh. Only the last call's nodes are kept, so a node no longer listed is forgotten.
- The cache is per process (one Lambda container, one provisioner), and keeping an entry keeps its node
  object alive, so an identity is never reused for another node while its entry exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from longshore.core.claims import NodeObservation
from longshore.services.snapshot import node_ready, node_taints, provider_id_of


def observe(node: Mapping[str, Any]) -> NodeObservation:
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    return NodeObservation(
        name=str(metadata.get("name") or ""),
        provider_id=provider_id_of(node),
        ready=node_ready(node),
        taints=node_taints(node),
        labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
        deleting=bool(metadata.get("deletionTimestamp")),
        finalizers=tuple(str(f) for f in metadata.get("finalizers") or ()),
    )


_OBSERVED: dict[int, tuple[Mapping[str, Any], NodeObservation]] = {}
"""The last pass's observations by node object identity (each entry keeps its object alive): the watch cache
hands back the same dict for a node that did not change, so a warm pass observes only the nodes that did."""


def observe_all(nodes: Iterable[Mapping[str, Any]]) -> list[NodeObservation]:
    """`observe` of each node, reusing the last pass's for the same objects (listed objects are read-only)."""
    global _OBSERVED
    kept = _OBSERVED
    seen: dict[int, tuple[Mapping[str, Any], NodeObservation]] = {}
    observed: list[NodeObservation] = []
    for node in nodes:
        entry = kept.get(id(node))
        if entry is None or entry[0] is not node:
            entry = (node, observe(node))
        seen[id(node)] = entry
        observed.append(entry[1])
    _OBSERVED = seen  # what is no longer listed is forgotten
    return observed
