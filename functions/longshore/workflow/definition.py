"""The disruption and rotation state machines (Amazon States Language, JSONPath), in one place.

Theory of operation: CDK (`infra/`) and the tests both call `disruption_definition` and
`rotation_definition`; what the tests execute is exactly what is deployed. Every Task calls the one
`workflow_steps` Lambda with `{"step": <name>, "execution": $$.Execution.Name, "state": $}` and the Lambda
returns the new state, which replaces `$`. Waiting is always a Wait state (a drain never busy-loops inside a
Lambda), and every loop is bounded by the steps (deadlines and poll counts, see `steps.WorkflowLimits`)
plus the execution's `TimeoutSeconds`.

Disruption:

    Validate -> SurgeFirst? -> LaunchReplacement -> UrgentSkipsWait? -> WaitForReplacement <-> CheckReplacement
             -> Taint -> Drain <-> WaitForDrain -> Terminate -> WaitForTermination <-> CheckTermination
             -> Finalize
    any error from LaunchReplacement .. Drain  -> Rollback -> RolledBack (Fail, with the original error)
        except for a reclaim (reason `interruption`), which is never untainted: Rollback keeps the taint and,
        before the deadline, WaitToRetry -> Taint -> Drain again; at the deadline -> RolledBack (Fail) with
        the node still cordoned (a later event may start a new attempt, see `adapters.aws.stepfunctions`)
    any error from Terminate, CheckTermination -> AbortTermination -> TerminationFailed (Fail, with the
        original error): the drain is complete by then; the node is untainted when its instance still runs
        (and is not being reclaimed by AWS), left cordoned when the instance is going away
    an error in Validate fails the execution directly: nothing was changed yet.
    a drain longer than one execution may run (`WorkflowLimits.max_execution_drain_s`) -> ContinueDrain
        starts `<name>-c<n>` with the whole state (Resumed -> Drain there) -> Continued (Succeed): a far
        deadline is never clamped, the drain is chained instead
    a reclaim (reason `interruption`) of a node this execution is disrupting takes the node over; this
        execution's Drain then reports `superseded` -> Superseded (Succeed), leaving the node to the reclaim

Rotation:

    PlanRotation (refuses nodes the cluster does not own) -> HasCanary? -> RotateCanary (nested disruption
    execution, startExecution.sync:2) -> RotateRest (Map, MaxConcurrency = maxUnavailable, one nested
    disruption execution per node) -> Rotated
"""

from __future__ import annotations

from typing import Any, Final

from longshore.workflow.errors import RETRYABLE_ERRORS

REPLACEMENT_POLL_SECONDS: Final = 15
TERMINATION_POLL_SECONDS: Final = 10
TASK_TIMEOUT_SECONDS: Final = 120
DISRUPTION_TIMEOUT_SECONDS: Final = 26 * 3600  # 20 h of drain per execution + replacement and termination
START_EXECUTION: Final = "arn:aws:states:::states:startExecution"
ROTATION_TIMEOUT_SECONDS: Final = 7 * 24 * 3600
START_EXECUTION_SYNC: Final = "arn:aws:states:::states:startExecution.sync:2"

Definition = dict[str, Any]


def _retry() -> list[dict[str, Any]]:
    return [
        {
            "ErrorEquals": list(RETRYABLE_ERRORS),
            "IntervalSeconds": 2,
            "MaxAttempts": 4,
            "BackoffRate": 2.0,
            "MaxDelaySeconds": 30,
        }
    ]


def _step(
    function_arn: str, step: str, next_state: str | None, *, rollback: bool, catch: str | None = None
) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Comment": f"workflow_steps Lambda, step {step!r}",
        "Resource": function_arn,
        "Parameters": {"step": step, "execution.$": "$$.Execution.Name", "state.$": "$"},
        "TimeoutSeconds": TASK_TIMEOUT_SECONDS,
        "Retry": _retry(),
    }
    handler = "Rollback" if rollback else catch
    if handler is not None:
        state["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": handler}]
    if next_state is None:
        state["End"] = True
    else:
        state["Next"] = next_state
    return state


def _choice(variable: str, test: dict[str, Any], then: str, otherwise: str) -> dict[str, Any]:
    return {"Type": "Choice", "Choices": [{"Variable": variable, **test, "Next": then}], "Default": otherwise}


def disruption_definition(steps_function_arn: str) -> Definition:
    """Cordon (taint), drain and terminate one node; see the module docstring for the graph."""
    fn = steps_function_arn
    return {
        "Comment": "Longshore disruption: validate, surge, taint, drain (PDB-safe, bounded), terminate, delete",
        "StartAt": "Resumed",
        "TimeoutSeconds": DISRUPTION_TIMEOUT_SECONDS,
        "States": {
            "Resumed": {
                "Type": "Choice",
                "Comment": "A drain continued from an earlier execution goes straight back to Drain",
                "Choices": [
                    {
                        "And": [
                            {"Variable": "$.drain.status", "IsPresent": True},
                            {"Variable": "$.drain.status", "StringEquals": "continued"},
                        ],
                        "Next": "Drain",
                    }
                ],
                "Default": "Validate",
            },
            "Validate": _step(fn, "validate", "SurgeFirst", rollback=False),
            "SurgeFirst": _choice("$.replace", {"BooleanEquals": True}, "LaunchReplacement", "Taint"),
            "LaunchReplacement": _step(fn, "launch_replacement", "UrgentSkipsWait", rollback=True),
            "UrgentSkipsWait": _choice("$.urgent", {"BooleanEquals": True}, "Taint", "WaitForReplacement"),
            "WaitForReplacement": {
                "Type": "Wait",
                "Seconds": REPLACEMENT_POLL_SECONDS,
                "Next": "CheckReplacement",
            },
            "CheckReplacement": _step(fn, "check_replacement", "ReplacementReady", rollback=True),
            "ReplacementReady": _choice(
                "$.replacement.status", {"StringEquals": "initialized"}, "Taint", "WaitForReplacement"
            ),
            "Taint": _step(fn, "taint", "Drain", rollback=True),
            "Drain": _step(fn, "drain", "Drained", rollback=True),
            "Drained": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.drain.status", "StringEquals": "drained", "Next": "Terminate"},
                    {"Variable": "$.drain.status", "StringEquals": "superseded", "Next": "Superseded"},
                    {"Variable": "$.drain.status", "StringEquals": "continued", "Next": "ContinueDrain"},
                ],
                "Default": "WaitForDrain",
            },
            "Superseded": {
                "Type": "Succeed",
                "Comment": "A reclaim of the instance took the node over and drains it by its own deadline",
            },
            "WaitForDrain": {"Type": "Wait", "SecondsPath": "$.drain.waitSeconds", "Next": "Drain"},
            "ContinueDrain": {
                "Type": "Task",
                "Comment": "This execution has drained as long as one may: a new one goes on (same input and "
                "progress), takes the node over and drains until the real deadline",
                "Resource": START_EXECUTION,
                "Parameters": {
                    "StateMachineArn.$": "$$.StateMachine.Id",
                    "Name.$": "$.drain.continuation",
                    "Input.$": "$",
                },
                "ResultSelector": {"executionArn.$": "$.ExecutionArn"},
                "ResultPath": "$.continuedAs",
                "Retry": _retry(),
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Rollback"}],
                "Next": "Continued",
            },
            "Continued": {
                "Type": "Succeed",
                "Comment": "The drain goes on in the execution named in the output",
            },
            "Terminate": _step(
                fn, "terminate", "WaitForTermination", rollback=False, catch="AbortTermination"
            ),
            "WaitForTermination": {
                "Type": "Wait",
                "Seconds": TERMINATION_POLL_SECONDS,
                "Next": "CheckTermination",
            },
            "CheckTermination": _step(
                fn, "check_termination", "Terminated", rollback=False, catch="AbortTermination"
            ),
            "Terminated": _choice(
                "$.termination.status", {"StringEquals": "terminated"}, "Finalize", "WaitForTermination"
            ),
            "Finalize": _step(fn, "finalize", None, rollback=False),
            "Rollback": _step(fn, "rollback", "RetryReclaim", rollback=False),
            "RetryReclaim": _choice("$.rollback.retry", {"BooleanEquals": True}, "WaitToRetry", "RolledBack"),
            "WaitToRetry": {"Type": "Wait", "SecondsPath": "$.rollback.waitSeconds", "Next": "Taint"},
            "AbortTermination": _step(fn, "abort_termination", "TerminationFailed", rollback=False),
            "TerminationFailed": {
                "Type": "Fail",
                "Comment": "Termination failed after the drain; the node was untainted if its instance still "
                "runs, else left cordoned; the termination error is the execution's error",
                "ErrorPath": "$.terminationFailure.error",
                "CausePath": "$.terminationFailure.reason",
            },
            "RolledBack": {
                "Type": "Fail",
                "Comment": "The taint was removed (a reclaim keeps it); the error that caused the rollback is the "
                "execution's error",
                "ErrorPath": "$.rollback.error",
                "CausePath": "$.rollback.reason",
            },
        },
    }


def _nested(disruption_state_machine_arn: str, item_path: str, next_state: str | None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Comment": "One node through the disruption state machine, as a nested execution",
        "Resource": START_EXECUTION_SYNC,
        "Parameters": {
            "StateMachineArn": disruption_state_machine_arn,
            "Name.$": f"{item_path}.name",
            "Input.$": f"{item_path}.input",
        },
        "ResultSelector": {"executionArn.$": "$.ExecutionArn", "status.$": "$.Status"},
    }
    if next_state is None:
        state["End"] = True
    else:
        state["Next"] = next_state
    return state


def rotation_definition(steps_function_arn: str, disruption_state_machine_arn: str) -> Definition:
    """Rotate a list of nodes: refuse foreign nodes, one canary first, then `maxUnavailable` at a time."""
    canary = _nested(disruption_state_machine_arn, "$.canary", "RotateRest")
    canary["ResultPath"] = "$.canaryResult"
    return {
        "Comment": "Longshore rotation: a canary node first, then the rest with bounded concurrency",
        "StartAt": "PlanRotation",
        "TimeoutSeconds": ROTATION_TIMEOUT_SECONDS,
        "States": {
            "PlanRotation": _step(steps_function_arn, "plan_rotation", "HasCanary", rollback=False),
            "HasCanary": _choice("$.hasCanary", {"BooleanEquals": True}, "RotateCanary", "RotateRest"),
            "RotateCanary": canary,
            "RotateRest": {
                "Type": "Map",
                "ItemsPath": "$.rest",
                "MaxConcurrencyPath": "$.maxUnavailable",
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "RotateNode",
                    "States": {"RotateNode": _nested(disruption_state_machine_arn, "$", None)},
                },
                "ResultPath": "$.results",
                "Next": "Rotated",
            },
            "Rotated": {"Type": "Succeed"},
        },
    }
