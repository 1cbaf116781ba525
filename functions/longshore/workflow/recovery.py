"""The steps that undo or stop a disruption: `rollback` (any failure before terminate: untaint and give the
node back, except a reclaim, which never rolls back and retries its drain until its deadline) and
`abort_termination` (terminate or check_termination failed: untaint a node whose instance still runs, keep a
dying one cordoned, say why in an Event). The rules are in `workflow.steps`'s module docstring."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from typing import Any, Final

from longshore.core.commands import DisruptionReason
from longshore.ports.kube import ClusterUnavailableError, NodePatch, ObjectRef
from longshore.workflow import nodes
from longshore.workflow.context import (
    State,
    StepPorts,
    event,
    reclaims,
)
from longshore.workflow.state import DisruptionState

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
            event(
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
    if reclaims(current.command):
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
        event(
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
_RECLAIMED_REASONS: Final = frozenset({DisruptionReason.INTERRUPTION})


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
        event(
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
