"""Karpenter's custom resources in the cluster (`karpenter.sh` NodePool and NodeClaim, `karpenter.k8s.aws`
EC2NodeClass), as a port.

Contract: objects cross as plain dicts shaped like `kubectl get -o json`. A kind whose CRD is not installed
reads as empty (a cluster without Karpenter's CRDs simply has no such objects); every other failure is the
adapter's to retry and, when retries are exhausted, raises `ports.kube.ClusterUnavailableError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from longshore.core.claims import NodeClaim
from longshore.core.disruption.state import DisruptionInput

Kind = Literal["NodePool", "EC2NodeClass", "NodeClaim", "NodeOverlay"]


class KarpenterObjects(Protocol):
    def list_objects(self, kind: Kind) -> tuple[dict[str, Any], ...]:
        """Every object of `kind` (empty when its CRD is not installed)."""
        ...

    def write_status(self, kind: Kind, name: str, status: Mapping[str, Any]) -> None:
        """Replace the object's `status` through the status subresource; an object that is gone is ignored."""
        ...

    def apply(self, kind: Kind, obj: Mapping[str, Any]) -> None:
        """Create the object, or replace its labels, annotations, finalizers and spec, then its status."""
        ...

    def release_object(self, kind: Kind, name: str) -> None:
        """Remove the object's finalizers and delete it; an object that is gone is ignored."""
        ...


class ClaimConditions(Protocol):
    def publish(self, claims: Sequence[NodeClaim], inp: DisruptionInput, started: Mapping[str, str]) -> None:
        """After a planner pass: write what it knows of each claim's node (`core.disruption.conditions`:
        Drifted, Consolidatable, Disrupting; `started` maps the nodes whose removal it started to the reason)
        as the NodeClaims' conditions. Never raises: a failed write waits for the next pass."""
        ...
