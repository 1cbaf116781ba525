"""The planner's NodeClaim conditions, written after each pass (`ports.karpenter.ClaimConditions`).

Decide then act: `core.disruption.conditions.claim_flags` says, from the pass's input, which claims' nodes are
Drifted (and why), Consolidatable (since when) and Disrupting (for what reason); `KarpenterObjectSync`
writes each NodeClaim whose conditions differ (a condition whose status is unchanged keeps its
`lastTransitionTime`). The provisioner, which does not know these flags, keeps what the objects show.
A failure is logged and left for the next pass: conditions are for people and tools, never for deciding.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from longshore.core.claims import NodeClaim
from longshore.core.disruption.conditions import claim_flags
from longshore.core.disruption.state import DisruptionInput
from longshore.services.karpenter_sync import KarpenterObjectSync

log = logging.getLogger(__name__)


class NodeClaimConditions:
    """`ports.karpenter.ClaimConditions` through Karpenter's objects in the cluster."""

    def __init__(self, sync: KarpenterObjectSync) -> None:
        self._sync = sync

    def publish(self, claims: Sequence[NodeClaim], inp: DisruptionInput, started: Mapping[str, str]) -> None:
        try:
            self._sync.publish_claims(claims, claim_flags(inp, started))
        except Exception as error:  # the next pass writes them again
            log.warning("could not write NodeClaim conditions", extra={"error": str(error)})
