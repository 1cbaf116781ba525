"""What every workflow step works with: the ports (`StepPorts`), the limits that bound every loop
(`WorkflowLimits`), and the lookups and Event posting the steps share. No step lives here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from longshore.core.claims import NodeClaim
from longshore.core.commands import DisruptionCommand, DisruptionReason
from longshore.ports.clock import Clock
from longshore.ports.cloud import Instances
from longshore.ports.kube import Cluster, KubeEvent, Manifest, ObjectRef
from longshore.ports.store import ClaimStore
from longshore.ports.workflow import ReplacementLauncher
from longshore.workflow import nodes

CLUSTER_TAG: Final = "longshore.io/cluster"


@dataclass(frozen=True, slots=True)
class WorkflowLimits:
    """Bounds on every loop of the disruption workflow (all in seconds unless named otherwise).

    Step Functions standard executions stop at 25,000 history events; a drain pass costs about 8 events,
    so `max_drain_passes` keeps one execution well under the limit. A deadline is never clamped: a drain
    that must go on longer than `max_execution_drain_s` (a scheduled change two weeks away, with a pod a
    PodDisruptionBudget protects) continues in a new execution (drain status `continued`), which takes the
    node over and goes on draining, PDB-safe, until the real deadline.
    """

    replacement_timeout_s: float = 20 * 60.0  # Karpenter: 5 min launch + 15 min registration
    drain_poll_fast_s: int = 10
    drain_poll_slow_s: int = 60
    drain_fast_phase_s: float = 5 * 60.0
    max_drain_passes: int = 1500
    max_drain_without_deadline_s: float = 3600.0
    max_execution_drain_s: float = 20 * 3600.0
    max_termination_polls: int = 60
    reclaim_retry_s: float = (
        15.0  # a failed reclaim drain waits this long (at most) before it goes round again
    )


@dataclass(frozen=True)
class StepPorts:
    """Everything the steps touch; the handler builds it from the environment, tests from fakes."""

    cluster_name: str
    cluster: Cluster
    claims: ClaimStore
    instances: Instances
    replacements: ReplacementLauncher
    clock: Clock
    termination_grace_periods: Mapping[str, int | None] = field(default_factory=dict)
    limits: WorkflowLimits = field(default_factory=WorkflowLimits)


State = dict[str, Any]


def event(ports: StepPorts, involved: ObjectRef, reason: str, message: str, warning: bool = False) -> None:
    ports.cluster.post_event(KubeEvent(involved, reason, message, "Warning" if warning else "Normal"))


def find_claim(ports: StepPorts, command: DisruptionCommand) -> NodeClaim | None:
    claim = ports.claims.get(command.claim_id) if command.claim_id else None
    return claim or ports.claims.by_instance(command.instance_id)


def find_node(ports: StepPorts, command: DisruptionCommand, claim: NodeClaim | None) -> Manifest | None:
    name = command.node_name or (claim.node_name if claim else None)
    if name:
        return ports.cluster.get_node(name)
    found = nodes.find_node_for_instance(ports.cluster.list_nodes(), command.instance_id)
    return dict(found) if found is not None else None


def owned_by_tag(ports: StepPorts, instance_id: str) -> bool:
    return any(i.instance_id == instance_id for i in ports.instances.list_owned())


def reclaims(command: DisruptionCommand) -> bool:
    """AWS takes this instance away at the deadline whatever we do (spot warning, scheduled change...)."""
    return command.reason == DisruptionReason.INTERRUPTION


def held_by_other_execution(node: Manifest, execution_name: str) -> str | None:
    """The other Longshore execution that holds the node's disruption taint, if any (a reclaim took over)."""
    holder = nodes.disrupted_by(node)
    if nodes.has_disrupted_taint(node) and holder and holder != execution_name:
        return holder
    return None
