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

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

from longshore.core.commands import DisruptionReason, execution_name_of
from longshore.core.drain import DrainPlan, drain_pod_from_manifest, effective_deadline, plan_drain, summarize
from longshore.ports.kube import Manifest, NodePatch, ObjectRef
from longshore.workflow import nodes
from longshore.workflow.context import (
    CLUSTER_TAG,
    State,
    StepPorts,
    WorkflowLimits,
    event,
    find_claim,
    find_node,
    held_by_other_execution,
    owned_by_tag,
    reclaims,
)
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
from longshore.workflow.recovery import abort_termination, rollback
from longshore.workflow.rotation_plan import plan_rotation
from longshore.workflow.state import DisruptionState, DrainProgress, ReplacementProgress, TerminationProgress

# ----------------------------------------------------------------------------------------------------------
# 1. Validate


def validate(state: State, ports: StepPorts) -> State:
    """Refuse instances this cluster does not own, and nodes already being disrupted; find the node and pool."""
    current = DisruptionState.from_json(state)
    command = current.command
    claim = find_claim(ports, command)
    node = find_node(ports, command, claim)
    if node is not None and nodes.instance_id_of_node(node) not in (None, command.instance_id):
        raise NodeMismatchError(
            f"node {nodes.name_of(node)} runs instance {nodes.instance_id_of_node(node)}, "
            f"not {command.instance_id}; refusing to disrupt"
        )
    if claim is None and not owned_by_tag(ports, command.instance_id):
        where = (
            f"node {nodes.name_of(node)} (instance {command.instance_id})"
            if node
            else f"instance {command.instance_id}"
        )
        raise NotOwnedError(
            f"{where} is not owned by cluster {ports.cluster_name}: no NodeClaim in the store and no "
            f"{CLUSTER_TAG}={ports.cluster_name} tag; refusing to disrupt it"
        )
    if node is not None and nodes.has_disrupted_taint(node) and not reclaims(command):
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
    claim = find_claim(ports, current.command)
    node = ports.cluster.get_node(current.node_name) if current.node_name else None
    claim_id = ports.replacements.launch_replacement(claim, node, current.command.reason, now)
    progress = ReplacementProgress(claim_id, "launching", 0, now + ports.limits.replacement_timeout_s)
    if node is not None:
        event(
            ports, nodes.ref_of(node), "DisruptionLaunching", f"Launching replacement node claim {claim_id}"
        )
    return current.evolve(replacement=progress).to_json()


def check_replacement(state: State, ports: StepPorts) -> State:
    """`initialized` once the replacement's claim is and the node's pods have a home (else the claim of a
    further replacement, `ReplacementLauncher.top_up`, is waited for in turn); fails when the claim is
    forgotten or time runs out."""
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
        # Pods that arrived while it booted may have taken its room: the pods to evict must have a home now.
        node = ports.cluster.get_node(current.node_name) if current.node_name else None
        more = ports.replacements.top_up(
            find_claim(ports, current.command), node, current.command.reason, now, claim.id
        )
        if more is not None:
            if node is not None:
                event(
                    ports,
                    nodes.ref_of(node),
                    "DisruptionLaunching",
                    f"Pods took the room of replacement {claim.id} while it booted; launching {more}",
                )
            return current.evolve(
                replacement=ReplacementProgress(more, "launching", progress.polls + 1, progress.give_up_at)
            ).to_json()
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
        if reclaims(current.command):
            event(
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
    event(ports, nodes.ref_of(node), "DisruptionTerminating", f"Disrupting node: {current.command.reason}")
    return progressed.evolve(tainted=True).to_json()


def _reclaims_holder(node: Manifest) -> bool:
    return bool(
        nodes.disrupted_by(node)
        and nodes.annotations_of(node).get(nodes.DISRUPTION_REASON_ANNOTATION)
        == DisruptionReason.INTERRUPTION
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
    holder = held_by_other_execution(node, current.execution_name) if node is not None else None
    if holder is not None:
        # Another execution (a reclaim: only a reclaim takes a held node over) now holds the node and drains
        # it by its own deadline. Yield: no eviction from here, no termination, no rollback of its taint.
        event(
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
            event(
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
        event(
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
