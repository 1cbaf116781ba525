"""The disruption and rotation workflow steps, as plain functions: `step(state, ports) -> new state`.

Theory of operation: the state machines (`workflow.definition`) do the sequencing, the waiting and the error
routing; each Task state calls one function here through the `workflow_steps` Lambda. A step reads the time
once from `ports.clock`, reads what it needs from the cluster and the stores, performs one bounded batch of
actions, and returns the whole state with its progress recorded. Steps never sleep: every wait is a Wait
state, and every loop (replacement, drain, termination) is bounded by a deadline or a poll count checked
here, so an execution always ends. Steps are idempotent where Step Functions may retry them: a repeated
taint recognises its own annotation, eviction and deletion of a gone pod are no-ops, terminate is idempotent.

A reclaim (reason `interruption`: AWS takes the instance at its deadline) wins over a voluntary disruption of
the same node: validate does not refuse it, taint takes the node over (its annotation now names the
reclaim's execution, its deadline is the reclaim's), and the voluntary execution yields at its next taint
or drain step (drain status `superseded`, the execution succeeds without touching the node further).

Disruption, in order: validate -> [launch_replacement -> check_replacement ...] -> taint -> drain ... ->
terminate -> check_termination ... -> finalize. Any error before terminate -> rollback; an error in
terminate or check_termination -> abort_termination (untaint a node whose instance still runs, keep a dying
one cordoned, say why in an Event), then the execution fails with that error.
Rotation: plan_rotation resolves and checks every node, then the state machine starts one disruption
execution per node (a canary first).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from longshore.core.claims import NodeClaim
from longshore.core.commands import CommandError, DisruptionCommand, RotationRequest, execution_name_of
from longshore.core.drain import DrainPlan, drain_pod_from_manifest, effective_deadline, plan_drain, summarize
from longshore.core.interruption import INTERRUPTION_REASON
from longshore.ports.clock import Clock
from longshore.ports.cloud import Instances
from longshore.ports.kube import Cluster, ClusterUnavailableError, KubeEvent, Manifest, NodePatch, ObjectRef
from longshore.ports.store import ClaimStore
from longshore.ports.workflow import ReplacementLauncher
from longshore.workflow import nodes
from longshore.workflow.errors import (
    AlreadyDisruptingError,
    DrainTimedOutError,
    NodeMismatchError,
    NotOwnedError,
    ReplacementFailedError,
    ReplacementTimedOutError,
    StepInputError,
    TerminationTimedOutError,
)
from longshore.workflow.state import DisruptionState, DrainProgress, ReplacementProgress, TerminationProgress

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


def _event(ports: StepPorts, involved: ObjectRef, reason: str, message: str, warning: bool = False) -> None:
    ports.cluster.post_event(KubeEvent(involved, reason, message, "Warning" if warning else "Normal"))


def _find_claim(ports: StepPorts, command: DisruptionCommand) -> NodeClaim | None:
    claim = ports.claims.get(command.claim_id) if command.claim_id else None
    return claim or ports.claims.by_instance(command.instance_id)


def _find_node(ports: StepPorts, command: DisruptionCommand, claim: NodeClaim | None) -> Manifest | None:
    name = command.node_name or (claim.node_name if claim else None)
    if name:
        return ports.cluster.get_node(name)
    found = nodes.find_node_for_instance(ports.cluster.list_nodes(), command.instance_id)
    return dict(found) if found is not None else None


def _owned_by_tag(ports: StepPorts, instance_id: str) -> bool:
    return any(i.instance_id == instance_id for i in ports.instances.list_owned())


def _reclaims(command: DisruptionCommand) -> bool:
    """AWS takes this instance away at the deadline whatever we do (spot warning, scheduled change...)."""
    return command.reason == INTERRUPTION_REASON


def _held_by_other_execution(node: Manifest, execution_name: str) -> str | None:
    """The other Longshore execution that holds the node's disruption taint, if any (a reclaim took over)."""
    holder = nodes.disrupted_by(node)
    if nodes.has_disrupted_taint(node) and holder and holder != execution_name:
        return holder
    return None


# ----------------------------------------------------------------------------------------------------------
# 1. Validate


def validate(state: State, ports: StepPorts) -> State:
    """Refuse instances this cluster does not own, and nodes already being disrupted; find the node and pool."""
    current = DisruptionState.from_json(state)
    command = current.command
    claim = _find_claim(ports, command)
    node = _find_node(ports, command, claim)
    if node is not None and nodes.instance_id_of_node(node) not in (None, command.instance_id):
        raise NodeMismatchError(
            f"node {nodes.name_of(node)} runs instance {nodes.instance_id_of_node(node)}, "
            f"not {command.instance_id}; refusing to disrupt"
        )
    if claim is None and not _owned_by_tag(ports, command.instance_id):
        where = (
            f"node {nodes.name_of(node)} (instance {command.instance_id})"
            if node
            else f"instance {command.instance_id}"
        )
        raise NotOwnedError(
            f"{where} is not owned by cluster {ports.cluster_name}: no NodeClaim in the store and no "
            f"{CLUSTER_TAG}={ports.cluster_name} tag; refusing to disrupt it"
        )
    if node is not None and nodes.has_disrupted_taint(node) and not _reclaims(command):
        # A reclaim is not refused: the instance dies at its deadline anyway, so it takes the node over from
        # a voluntary disruption (which yields at its next step) and drains it by the reclaim deadline.
        holder = nodes.disrupted_by(node)
        if holder != current.execution_name or not holder:
            by = f"by execution {holder}" if holder else "by another controller"
            raise AlreadyDisruptingError(
                f"node {nodes.name_of(node)} is already being disrupted {by} "
                f"(it carries {nodes.DISRUPTED_TAINT.key}:{nodes.DISRUPTED_TAINT.effect})"
            )
    pool = claim.nodepool if claim else (nodes.labels_of(node).get(nodes.NODEPOOL_LABEL) if node else None)
    updated = current.with_command(
        node_name=nodes.name_of(node) if node is not None else command.node_name,
        claim_id=claim.id if claim else command.claim_id,
    )
    return updated.evolve(node_pool=pool).to_json()


# ----------------------------------------------------------------------------------------------------------
# 2. Replacement (surge)


def launch_replacement(state: State, ports: StepPorts) -> State:
    """Launch the node that takes over (idempotent per claim and reason); its claim id goes in the state."""
    current = DisruptionState.from_json(state)
    now = ports.clock.now()
    if current.replacement.claim_id:
        return current.to_json()
    claim = _find_claim(ports, current.command)
    node = ports.cluster.get_node(current.node_name) if current.node_name else None
    claim_id = ports.replacements.launch_replacement(claim, node, current.command.reason, now)
    progress = ReplacementProgress(claim_id, "launching", 0, now + ports.limits.replacement_timeout_s)
    if node is not None:
        _event(
            ports, nodes.ref_of(node), "DisruptionLaunching", f"Launching replacement node claim {claim_id}"
        )
    return current.evolve(replacement=progress).to_json()


def check_replacement(state: State, ports: StepPorts) -> State:
    """`initialized` once the replacement's claim is; fails when the claim is forgotten or time runs out."""
    current = DisruptionState.from_json(state)
    now = ports.clock.now()
    progress = current.replacement
    if not progress.claim_id:
        raise StepInputError("check_replacement: no replacement claim id in the state")
    claim = ports.claims.get(progress.claim_id)
    if claim is None:
        raise ReplacementFailedError(
            f"replacement node claim {progress.claim_id} was forgotten (its launch failed or timed out)"
        )
    if claim.state == "initialized":
        return current.evolve(
            replacement=ReplacementProgress(claim.id, "initialized", progress.polls + 1, progress.give_up_at)
        ).to_json()
    if progress.give_up_at is not None and now >= progress.give_up_at:
        raise ReplacementTimedOutError(
            f"replacement node claim {claim.id} is still {claim.state} after "
            f"{ports.limits.replacement_timeout_s:.0f} s"
        )
    return current.evolve(
        replacement=ReplacementProgress(claim.id, "launching", progress.polls + 1, progress.give_up_at)
    ).to_json()


# ----------------------------------------------------------------------------------------------------------
# 3. Taint


def taint(state: State, ports: StepPorts) -> State:
    """Taint `karpenter.sh/disrupted:NoSchedule`, name this execution on the node, start the drain clock."""
    current = DisruptionState.from_json(state)
    now = ports.clock.now()
    limits = ports.limits
    grace = ports.termination_grace_periods.get(current.node_pool or "")
    command_deadline = current.command.deadline_epoch
    if current.drain_seconds is not None:
        relative = now + current.drain_seconds
        command_deadline = relative if command_deadline is None else min(command_deadline, relative)
    deadline = effective_deadline(command_deadline, now, grace)
    give_up_at = None if deadline is not None else now + limits.max_drain_without_deadline_s
    drain = DrainProgress(status="draining", started_at=now, wait_seconds=limits.drain_poll_fast_s)
    progressed = current.evolve(deadline=deadline, give_up_at=give_up_at, drain=drain)

    node = ports.cluster.get_node(current.node_name) if current.node_name else None
    if node is None:
        return progressed.evolve(tainted=False).to_json()
    holder = nodes.disrupted_by(node)
    if nodes.has_disrupted_taint(node) and holder != current.execution_name:
        if _reclaims(current.command):
            _event(
                ports,
                nodes.ref_of(node),
                "DisruptionTakenOver",
                f"The instance is being reclaimed: this disruption ({current.execution_name}) takes the node "
                f"over from {holder or 'another controller'} and drains it by the reclaim deadline",
                warning=True,
            )
        elif _reclaims_holder(node):
            # The node is being reclaimed by AWS under another execution: yield (Drain reports `superseded`).
            return progressed.evolve(tainted=False).to_json()
        else:
            raise AlreadyDisruptingError(
                f"node {nodes.name_of(node)} was tainted by {holder or 'another controller'}"
            )
    patch = NodePatch(
        annotations=(
            (nodes.DISRUPTION_ANNOTATION, current.execution_name),
            (nodes.DISRUPTION_REASON_ANNOTATION, current.command.reason),
        ),
        taints=nodes.with_taint(nodes.taints_of(node), nodes.DISRUPTED_TAINT),
    )
    if ports.cluster.patch_node(nodes.name_of(node), patch) is None:
        return progressed.evolve(tainted=False).to_json()
    _event(ports, nodes.ref_of(node), "DisruptionTerminating", f"Disrupting node: {current.command.reason}")
    return progressed.evolve(tainted=True).to_json()


def _reclaims_holder(node: Manifest) -> bool:
    return bool(
        nodes.disrupted_by(node)
        and nodes.annotations_of(node).get(nodes.DISRUPTION_REASON_ANNOTATION) == INTERRUPTION_REASON
    )


# ----------------------------------------------------------------------------------------------------------
# 4-5. Drain, until no evictable pod remains


def _next_wait(
    plan: DrainPlan, now: float, started_at: float, give_up_at: float | None, limits: WorkflowLimits
) -> int:
    fast = now - started_at < limits.drain_fast_phase_s
    wait = float(limits.drain_poll_fast_s if fast else limits.drain_poll_slow_s)
    for moment in (plan.next_forced_at, give_up_at):
        if moment is not None:
            wait = min(wait, max(1.0, math.ceil(moment - now)))
    return int(wait)


def drain(state: State, ports: StepPorts) -> State:
    """One drain pass: delete pods past the deadline, evict the current tier, report what remains."""
    current = DisruptionState.from_json(state)
    now = ports.clock.now()
    progress = current.drain
    started_at = progress.started_at if progress.started_at is not None else now
    if not current.node_name:
        # Validate found no node, but the instance may have registered since (a surge waits minutes):
        # taint and drain that node rather than letting Terminate take its pods without eviction.
        late = nodes.find_node_for_instance(ports.cluster.list_nodes(), current.command.instance_id)
        if late is not None:
            return taint(current.with_command(node_name=nodes.name_of(late)).to_json(), ports)
        return current.evolve(
            drain=DrainProgress(status="drained", started_at=started_at, summary="no node")
        ).to_json()
    node_name: str = current.node_name
    node = ports.cluster.get_node(node_name)
    if progress.status == "continued":
        node, progress = _resume(current, progress, node, ports, now)
        current = current.evolve(drain=progress)
    holder = _held_by_other_execution(node, current.execution_name) if node is not None else None
    if holder is not None:
        # Another execution (a reclaim: only a reclaim takes a held node over) now holds the node and drains
        # it by its own deadline. Yield: no eviction from here, no termination, no rollback of its taint.
        _event(
            ports,
            nodes.ref_of(node) if node is not None else ObjectRef(kind="Node", name=node_name),
            "DisruptionSuperseded",
            f"Disruption ({current.command.reason}) yields node {current.node_name} to execution {holder}",
        )
        superseded = DrainProgress(
            status="superseded",
            started_at=started_at,
            passes=progress.passes,
            wait_seconds=0,
            remaining=progress.remaining,
            evicted=progress.evicted,
            deleted=progress.deleted,
            blocked_by_pdb=progress.blocked_by_pdb,
            summary=f"superseded by {holder}",
        )
        return current.evolve(drain=superseded, tainted=False, outcome="superseded").to_json()
    manifests = ports.cluster.list_pods(node_name=current.node_name)
    plan = plan_drain((drain_pod_from_manifest(m) for m in manifests), now, current.deadline)
    passes = progress.passes + 1
    if plan.remaining == 0:
        drained = DrainProgress(
            status="drained",
            started_at=started_at,
            passes=passes,
            wait_seconds=0,
            remaining=0,
            evicted=progress.evicted,
            deleted=progress.deleted,
            blocked_by_pdb=progress.blocked_by_pdb,
            summary="drained",
        )
        return current.evolve(drain=drained).to_json()
    if (
        current.give_up_at is not None and now >= current.give_up_at
    ) or passes > ports.limits.max_drain_passes:
        why = (
            "the disruption has no deadline to force it"
            if current.give_up_at is not None
            else f"it reached the limit of {ports.limits.max_drain_passes} drain passes"
        )
        raise DrainTimedOutError(
            f"node {current.node_name} did not drain within {now - started_at:.0f} s and {why}: "
            f"{progress.summary or summarize(plan)}"
        )

    node_ref = ObjectRef(kind="Node", name=node_name)
    for deletion in plan.delete:
        pod = deletion.pod
        if ports.cluster.delete_pod(pod.namespace, pod.name, grace_period_seconds=deletion.grace_seconds):
            _event(
                ports,
                ObjectRef(kind="Pod", name=pod.name, namespace=pod.namespace, uid=pod.uid),
                "Disrupted",
                f"Deleted at the drain deadline of node {current.node_name} (grace {deletion.grace_seconds} s)",
                warning=True,
            )
    evicted, blocked = 0, []
    for pod in plan.evict:
        result = ports.cluster.evict_pod(pod.namespace, pod.name, uid=pod.uid or None)
        if result.outcome == "evicted":
            evicted += 1
        elif result.outcome == "blocked":
            blocked.append(pod.key)
    summary = summarize(plan, blocked)
    # Like Karpenter's event recorder, do not repeat an unchanged complaint on every pass.
    if (blocked or plan.waiting_for("do-not-disrupt")) and (summary != progress.summary or passes % 10 == 1):
        _event(
            ports,
            node_ref,
            "FailedDraining",
            f"Failed to drain node, {plan.remaining} pods are waiting: {summary}",
            True,
        )
    segment = progress.segment_started_at if progress.segment_started_at is not None else started_at
    drained = replace(
        progress,
        status="draining",
        started_at=started_at,
        passes=passes,
        wait_seconds=_next_wait(plan, now, started_at, current.give_up_at, ports.limits),
        remaining=plan.remaining,
        evicted=progress.evicted + evicted,
        deleted=progress.deleted + len(plan.delete),
        blocked_by_pdb=progress.blocked_by_pdb + len(blocked),
        pass_blocked=len(blocked),
        summary=summary,
        segment_started_at=segment,
    )
    if now - segment >= ports.limits.max_execution_drain_s:
        drained = replace(
            drained,
            status="continued",
            wait_seconds=0,
            chain=drained.chain + 1,
            continuation=_continuation_name(current.execution_name, drained.chain + 1),
            continued_from=current.execution_name,
        )
    return current.evolve(drain=drained).to_json()


def _continuation_name(execution_name: str, chain: int) -> str:
    root = re.sub(r"-c\d+$", "", execution_name) or "disruption"
    return execution_name_of(root, f"c{chain}")


def _resume(
    current: DisruptionState, progress: DrainProgress, node: Manifest | None, ports: StepPorts, now: float
) -> tuple[Manifest | None, DrainProgress]:
    """The first Drain of a continued execution: take the node over from the execution that continued into
    this one (its disruption annotation names that execution), and start a new segment."""
    if node is not None and nodes.disrupted_by(node) == progress.continued_from and current.execution_name:
        patched = ports.cluster.patch_node(
            nodes.name_of(node),
            NodePatch(annotations=((nodes.DISRUPTION_ANNOTATION, current.execution_name),)),
        )
        node = patched if patched is not None else node
    resumed = replace(progress, status="draining", passes=0, segment_started_at=now, continuation=None)
    return node, resumed


# ----------------------------------------------------------------------------------------------------------
# 6. Terminate, and wait for it


def terminate(state: State, ports: StepPorts) -> State:
    current = DisruptionState.from_json(state)
    ports.instances.terminate([current.command.instance_id])
    progress = TerminationProgress("terminating", 0, ports.clock.now())
    return current.evolve(termination=progress).to_json()


def check_termination(state: State, ports: StepPorts) -> State:
    current = DisruptionState.from_json(state)
    progress = current.termination
    found = ports.instances.describe([current.command.instance_id])
    if not found or all(i.state == "terminated" for i in found):
        return current.evolve(
            termination=TerminationProgress("terminated", progress.polls + 1, progress.started_at)
        ).to_json()
    if progress.polls + 1 >= ports.limits.max_termination_polls:
        raise TerminationTimedOutError(
            f"instance {current.command.instance_id} is still {found[0].state} after {progress.polls + 1} checks"
        )
    return current.evolve(
        termination=TerminationProgress("terminating", progress.polls + 1, progress.started_at)
    ).to_json()


# ----------------------------------------------------------------------------------------------------------
# 7. Delete the node and the claim


def finalize(state: State, ports: StepPorts) -> State:
    current = DisruptionState.from_json(state)
    if current.node_name:
        ports.cluster.delete_node(current.node_name)
    if current.claim_id:
        ports.claims.delete(current.claim_id)
    return current.evolve(outcome="disrupted").to_json()


# ----------------------------------------------------------------------------------------------------------
# Rollback (any failure before terminate)


def _error_text(error: Mapping[str, Any]) -> tuple[str, str]:
    name = str(error.get("Error") or "Unknown")
    cause = str(error.get("Cause") or "")
    try:
        parsed = json.loads(cause)
    except ValueError:
        return name, cause
    if isinstance(parsed, dict) and "errorMessage" in parsed:
        return name, str(parsed["errorMessage"])
    return name, cause


def _reclaim_retry(current: DisruptionState, name: str, message: str, ports: StepPorts) -> State:
    """A reclaim never rolls back: the instance goes at its deadline whatever we do, and an untainted node
    would take new pods onto it. Keep the taint; before the deadline, go round again (Taint, Drain) after a
    short wait; at the deadline, give up with the node still cordoned. No Kubernetes call before the decision:
    the failure is often the API itself."""
    now = ports.clock.now()
    previous = dict(current.extra).get("rollback")
    retries = int(previous.get("retries", 0)) if isinstance(previous, Mapping) else 0
    deadline = current.deadline if current.deadline is not None else current.command.deadline_epoch
    retry = deadline is not None and now < deadline
    wait = int(min(ports.limits.reclaim_retry_s, max(1.0, math.ceil((deadline or now) - now))))
    if not retry and current.node_name:
        with contextlib.suppress(ClusterUnavailableError):
            _event(
                ports,
                ObjectRef(kind="Node", name=current.node_name),
                "DisruptionFailed",
                f"Reclaim drain gave up at its deadline after {retries} retries: {name}: {message}; "
                "the node stays cordoned until the instance is gone",
                warning=True,
            )
    record = {
        "error": name,
        "reason": message,
        "untainted": False,
        "retry": retry,
        "retries": retries + (1 if retry else 0),
        "waitSeconds": wait,
    }
    data = current.evolve(outcome=None if retry else "reclaim-failed").to_json()
    data["rollback"] = record
    return data


def rollback(state: State, ports: StepPorts) -> State:
    """Remove this execution's taint and annotations, and record why on the node (an Event) and in the state.

    A reclaim (reason `interruption`) is never rolled back: see `_reclaim_retry`."""
    current = DisruptionState.from_json(state)
    error = dict(current.extra).get("error") or {}
    name, message = _error_text(error if isinstance(error, Mapping) else {})
    if _reclaims(current.command):
        return _reclaim_retry(current, name, message, ports)
    node = ports.cluster.get_node(current.node_name) if current.node_name else None
    untainted = False
    if node is not None and nodes.disrupted_by(node) == current.execution_name and current.execution_name:
        patch = NodePatch(
            annotations=((nodes.DISRUPTION_ANNOTATION, None), (nodes.DISRUPTION_REASON_ANNOTATION, None)),
            taints=nodes.without_taint(nodes.taints_of(node), nodes.DISRUPTED_TAINT),
        )
        untainted = ports.cluster.patch_node(nodes.name_of(node), patch) is not None
    if node is not None:
        extra = ""
        if current.replacement.claim_id:
            extra = (
                f"; replacement claim {current.replacement.claim_id} is kept (consolidation may remove it)"
            )
        _event(
            ports,
            nodes.ref_of(node),
            "DisruptionFailed",
            f"Disruption ({current.command.reason}) rolled back: {name}: {message}{extra}",
            warning=True,
        )
    record = {"error": name, "reason": message, "untainted": untainted, "retry": False}
    rolled = current.evolve(outcome="rolled-back", tainted=current.tainted and not untainted)
    data = rolled.to_json()
    data["rollback"] = record
    return data


# ----------------------------------------------------------------------------------------------------------
# Termination failed (Terminate or CheckTermination ended in an error)

#: Instance states in which the instance has not begun to go away: its node can serve pods again.
_STILL_RUNNING: Final = frozenset({"pending", "running", "stopping", "stopped"})
#: Reasons whose instance AWS takes away whatever we do: its node stays cordoned.
_RECLAIMED_REASONS: Final = frozenset({"interruption"})


def abort_termination(state: State, ports: StepPorts) -> State:
    """The instance could not be terminated (or did not finish terminating): never leave the node cordoned
    and drained without a word. Reached only after a complete drain, so no pod is put at risk here.

    - The instance still runs and is not being reclaimed by AWS: remove this execution's taint and
      annotations, so the empty node serves pods again (the planner may decide to remove it later).
    - The instance is going away (shutting down, or reclaimed by AWS): keep the taint, so no pod is scheduled
      onto a dying node; the lifecycle forgets the claim and deletes the Node once the instance is gone.

    Either way a Warning Event names the error on the node, and the execution then fails with that error
    (the `TerminationFailed` Fail state), which the failed-executions alarm counts.
    """
    current = DisruptionState.from_json(state)
    error = dict(current.extra).get("error") or {}
    name, message = _error_text(error if isinstance(error, Mapping) else {})
    instance_id = current.command.instance_id
    found = ports.instances.describe([instance_id])
    instance_state = found[0].state if found else "not found"
    running = instance_state in _STILL_RUNNING
    returned = running and current.command.reason not in _RECLAIMED_REASONS
    node = ports.cluster.get_node(current.node_name) if current.node_name else None
    untainted = False
    if (
        returned
        and node is not None
        and nodes.disrupted_by(node) == current.execution_name
        and current.execution_name
    ):
        patch = NodePatch(
            annotations=((nodes.DISRUPTION_ANNOTATION, None), (nodes.DISRUPTION_REASON_ANNOTATION, None)),
            taints=nodes.without_taint(nodes.taints_of(node), nodes.DISRUPTED_TAINT),
        )
        untainted = ports.cluster.patch_node(nodes.name_of(node), patch) is not None
    if node is not None:
        then = (
            "the node was returned to service"
            if untainted
            else "the node stays cordoned while the instance goes away"
        )
        _event(
            ports,
            nodes.ref_of(node),
            "DisruptionFailed",
            f"Disruption ({current.command.reason}) could not terminate instance {instance_id} "
            f"(it is {instance_state}): {name}: {message}; {then}",
            warning=True,
        )
    record = {
        "error": name,
        "reason": f"instance {instance_id} is {instance_state}: {message}",
        "instanceState": instance_state,
        "untainted": untainted,
    }
    aborted = current.evolve(outcome="termination-failed", tainted=current.tainted and not untainted)
    data = aborted.to_json()
    data["terminationFailure"] = record
    return data


# ----------------------------------------------------------------------------------------------------------
# Rotation


def _rotation_target(ports: StepPorts, node_name: str) -> tuple[str | None, str | None, str | None]:
    """(instance id, claim id, refusal reason) of one node to rotate."""
    node = ports.cluster.get_node(node_name)
    if node is None:
        return None, None, "node not found"
    instance_id = nodes.instance_id_of_node(node)
    if instance_id is None:
        return None, None, "node has no aws:/// providerID"
    claim = ports.claims.by_instance(instance_id)
    if claim is None and not _owned_by_tag(ports, instance_id):
        return (
            instance_id,
            None,
            (
                f"instance {instance_id}: no NodeClaim in the store and no {CLUSTER_TAG}={ports.cluster_name} tag"
            ),
        )
    if nodes.has_disrupted_taint(node):
        return instance_id, None, "already being disrupted"
    return instance_id, claim.id if claim else None, None


def plan_rotation(state: State, ports: StepPorts) -> State:
    """Check every node, then split them into the canary and the rest, each as a disruption execution input."""
    try:
        request = RotationRequest.from_input({k: v for k, v in state.items() if k != "executionName"})
    except CommandError as error:
        raise StepInputError(str(error)) from error
    parent = str(state.get("executionName") or request.execution_name())
    now = ports.clock.now()
    items, refused = [], []
    for node_name in request.nodes:
        instance_id, claim_id, refusal = _rotation_target(ports, node_name)
        if refusal is not None or instance_id is None:
            refused.append(f"{node_name} ({refusal})")
            continue
        command = DisruptionCommand(
            instance_id=instance_id,
            reason=request.reason,
            node_name=node_name,
            claim_id=claim_id,
            replace=request.surge,
            requested_at=now,
        )
        child_input: dict[str, Any] = {**command.to_input(), "drainSeconds": request.drain_seconds}
        items.append(
            {"name": execution_name_of(parent[:40], instance_id), "node": node_name, "input": child_input}
        )
    if refused:
        raise NotOwnedError(
            f"refusing to rotate {len(refused)} of {len(request.nodes)} nodes in cluster {ports.cluster_name}: "
            + "; ".join(refused)
        )
    canary = items[0] if request.canary and items else None
    rest = items[1:] if canary is not None else items
    return {
        **request.to_input(),
        "executionName": parent,
        "hasCanary": canary is not None,
        "canary": canary,
        "rest": rest,
    }


# ----------------------------------------------------------------------------------------------------------

StepFunction = Callable[[State, StepPorts], State]

STEPS: Final[Mapping[str, StepFunction]] = {
    "validate": validate,
    "launch_replacement": launch_replacement,
    "check_replacement": check_replacement,
    "taint": taint,
    "drain": drain,
    "terminate": terminate,
    "check_termination": check_termination,
    "finalize": finalize,
    "rollback": rollback,
    "abort_termination": abort_termination,
    "plan_rotation": plan_rotation,
}


def run_step(name: str, state: State, ports: StepPorts) -> State:
    """Run the step called `name` (the `step` field of the Lambda event)."""
    step = STEPS.get(name)
    if step is None:
        raise StepInputError(
            f"workflow step event: field 'step' has value {name!r}; expected one of {sorted(STEPS)}"
        )
    return step(state, ports)
