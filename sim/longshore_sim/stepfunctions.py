"""A virtual-time Step Functions executor for the simulation: the JSONPath ASL subset Longshore deploys.

Theory of operation. `StepFunctionsSimulator` interprets Amazon States Language documents (the very dicts
`workflow.definition` returns and CDK deploys) without threads or sleeping. Each execution is a Python
generator walking the state graph; whenever the real service would wait (a Wait state, a Retry back-off, a
nested `startExecution.sync:2` child, Map iterations in flight) the generator yields a `Blocked` value
saying until when, or until which child executions end. `advance(now)` resumes every execution whose
condition holds, over and over, until each one waits or ends; nothing happens between two calls. With a
`VirtualClock`, the simulator also schedules a clock timer at every wake-up time, so advancing the clock is
enough and a Wait ends exactly on time (steps then read the very instant the real service would give them).

Supported, with the service's semantics (JSONPath only; anything else is refused when an execution starts):

- Task: a Lambda function ARN (the payload goes to `invoke(resource, payload)`, by default the in-process
  `longshore.handlers.workflow_steps.handler`; an exception is the Lambda function error: `Error` = its class
  name, `Cause` = `{"errorMessage", "errorType"}` JSON) and `arn:aws:states:::states:startExecution.sync:2`
  (a nested execution of a registered state machine; its `Output` parsed, a failed child fails the task with
  `States.TaskFailed`); InputPath, Parameters (`.$` keys, the context object `$$`), ResultSelector,
  ResultPath (`null` discards), OutputPath; Retry (ErrorEquals, IntervalSeconds, MaxAttempts, BackoffRate,
  MaxDelaySeconds) and Catch (ErrorEquals, ResultPath, Next). `States.ALL` matches everything but
  `States.Runtime`; `States.TaskFailed` matches every task error but `States.Timeout`.
- Choice (Variable with the String/Numeric/Boolean/Timestamp comparisons and their `Path` forms, IsPresent,
  IsNull, IsString, IsNumeric, IsBoolean, And, Or, Not; Default), Wait (Seconds, SecondsPath, Timestamp,
  TimestampPath), Pass (Result, Parameters), Succeed, Fail (Error/Cause and their `Path` forms).
- Map (ItemsPath, ItemProcessor or Iterator, ItemSelector or Parameters with `$$.Map.Item`, MaxConcurrency or
  MaxConcurrencyPath; 0 = unbounded), iterations running side by side in virtual time.
- The machine's `TimeoutSeconds` (status `TIMED_OUT`) and the 25,000-event history limit (the execution fails
  with `States.Runtime`, as the service fails it), counted the way the service writes its history.

What each state does to its data (InputPath to OutputPath, Choice, Wait, Fail, Retry delays, Map items) is
`sim.asl_states`; this module runs the executions, their history and their time.

Execution names are unique per state machine: `start_execution` returns False for a name already used, like
the real `StartExecution` (the idempotency key of every disruption). `sim.sfn_workflows.SimulatedWorkflows` implements the
`DisruptionWorkflow` and `RotationWorkflow` ports on top of it, with `workflow.definition`'s real documents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final, Protocol

from longshore_sim import asl_states
from longshore_sim.asl import (
    JSON,
    START_EXECUTION,
    START_EXECUTION_SYNC,
    Definition,
    SimulatorError,
    StatesError,
    error_matches,
    json_copy,
    resolve_template,
    validate_definition,
    write_path,
)
from longshore_sim.sfn_execution import Blocked, Execution, HistoryEvent, iso_time

TaskInvoker = Callable[[str, JSON], JSON]

MAX_HISTORY_EVENTS: Final = 25_000
REGION: Final = "us-east-1"
ACCOUNT: Final = "123456789012"
DEFAULT_STEPS_ARN: Final = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:longshore-workflow-steps"
DEFAULT_DISRUPTION_ARN: Final = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:longshore-disruption"
DEFAULT_ROTATION_ARN: Final = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:longshore-rotation"
ANONYMOUS_ARN: Final = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:anonymous"

_MAX_STEPS_WITHOUT_WAIT: Final = 100_000


class _Clock(Protocol):
    def now(self) -> float: ...


# -- the simulator ------------------------------------------------------------------------------------------


def _default_invoker(resource: str, payload: JSON) -> JSON:
    from longshore.handlers import workflow_steps

    return workflow_steps.handler(payload, None)


class StepFunctionsSimulator:
    """Runs ASL executions on virtual time (see the module docstring)."""

    def __init__(
        self,
        clock: _Clock | None = None,
        invoke: TaskInvoker | None = None,
        *,
        start: float = 0.0,
    ) -> None:
        self._clock = clock
        self._invoke = invoke or _default_invoker
        self._time = clock.now() if clock is not None else start
        self._machines: dict[str, Definition] = {}
        self._executions: dict[tuple[str, str], Execution] = {}
        self._order: list[Execution] = []
        self._advancing = False
        self._timers: set[float] = set()

    # -- public API -----------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self._now

    @property
    def _now(self) -> float:
        """Virtual time: the clock's when there is one (it never goes back), else the last `advance` time."""
        if self._clock is not None:
            self._time = max(self._time, self._clock.now())
        return self._time

    def register(self, state_machine_arn: str, definition: Definition) -> None:
        """Create (or update) a state machine that nested `startExecution.sync:2` tasks may name."""
        validate_definition(definition, state_machine_arn)
        self._machines[state_machine_arn] = definition

    def start_execution(
        self, name: str, definition: Definition | None, input: JSON, *, state_machine_arn: str | None = None
    ) -> bool:
        """Start an execution; False when the state machine already has an execution with this name."""
        arn = state_machine_arn or ANONYMOUS_ARN
        if definition is None:
            if arn not in self._machines:
                raise SimulatorError(f"state machine {arn} is not registered")
            definition = self._machines[arn]
        return self._start(name, arn, definition, input, parent=None) is not None

    def execution(self, name: str, state_machine_arn: str | None = None) -> Execution:
        """The execution called `name` (of `state_machine_arn` when several machines use the name)."""
        found = [
            e
            for e in self._order
            if e.name == name and (state_machine_arn is None or e.state_machine_arn == state_machine_arn)
        ]
        if not found:
            raise KeyError(name)
        return found[-1]

    def executions(self, state_machine_arn: str | None = None) -> tuple[Execution, ...]:
        return tuple(
            e for e in self._order if state_machine_arn is None or e.state_machine_arn == state_machine_arn
        )

    def running(self) -> tuple[Execution, ...]:
        return tuple(e for e in self._order if not e.done)

    def next_wake(self) -> float | None:
        """The earliest time a waiting execution resumes (None when none waits on time)."""
        times = [
            e._blocked.until
            for e in self._order
            if not e.done and e._blocked is not None and e._blocked.until is not None
        ]
        return min(times) if times else None

    def advance(self, now: float | None = None) -> None:
        """Run every execution until it waits or ends, at virtual time `now` (default: the clock's)."""
        if now is not None:
            self._time = max(self._time, now)
        if self._advancing:
            return  # the running loop picks the new time up
        self._advancing = True
        try:
            progressed = True
            while progressed:
                progressed = False
                for execution in list(self._order):
                    if execution.done or not self._ready(execution):
                        continue
                    self._resume(execution)
                    progressed = True
        finally:
            self._advancing = False

    # -- internals ------------------------------------------------------------------------------------------
    def _start(
        self, name: str, arn: str, definition: Definition, input: JSON, parent: Execution | None
    ) -> Execution | None:
        if (arn, name) in self._executions:
            return None
        validate_definition(definition, arn)
        data = json_copy(input, f"execution {name} input")
        timeout = definition.get("TimeoutSeconds")
        execution = Execution(name, arn, data, self._now, float(timeout) if timeout else None, parent=parent)
        execution._runner = self._run_machine(execution, definition)
        self._event(execution, "ExecutionStarted")
        self._executions[(arn, name)] = execution
        self._order.append(execution)
        self._wake_at(self._now)
        return execution

    def _wake_at(self, when: float) -> None:
        clock = self._clock
        call_at = getattr(clock, "call_at", None)
        if call_at is None or when in self._timers:
            return
        self._timers.add(when)

        def wake() -> None:
            self._timers.discard(when)
            self.advance(when)

        call_at(when, wake)

    def _event(self, execution: Execution, kind: str, state: str = "", detail: str = "") -> None:
        execution.history.append(HistoryEvent(self._now, kind, state, detail))
        if len(execution.history) > MAX_HISTORY_EVENTS and execution.status == "RUNNING":
            raise StatesError(
                "States.Runtime",
                f"execution {execution.name} exceeded {MAX_HISTORY_EVENTS} history events",
            )

    def _ready(self, execution: Execution) -> bool:
        blocked = execution._blocked
        if blocked is None or blocked.ready(self._now):
            return True
        limit = execution.timeout_seconds
        return limit is not None and self._now >= execution.started_at + limit

    def _resume(self, execution: Execution) -> None:
        runner = execution._runner
        assert runner is not None
        if (
            execution.timeout_seconds is not None
            and self._now >= execution.started_at + execution.timeout_seconds
        ):
            runner.close()
            self._finish(execution, "TIMED_OUT", None, "States.Timeout", "the execution timed out")
            return
        try:
            blocked = next(runner)
        except StopIteration as stop:
            self._finish(execution, "SUCCEEDED", stop.value, None, None)
            return
        except StatesError as error:
            self._finish(execution, "FAILED", None, error.error, error.cause)
            return
        execution._blocked = blocked
        if blocked.until is not None:
            self._wake_at(blocked.until)
            if execution.timeout_seconds is not None:
                self._wake_at(execution.started_at + execution.timeout_seconds)

    def _finish(
        self, execution: Execution, status: str, output: JSON, error: str | None, cause: str | None
    ) -> None:
        execution.status = status
        execution.output = output
        execution.error = error
        execution.cause = cause
        execution.stopped_at = self._now
        execution._blocked = None
        execution.history.append(
            HistoryEvent(self._now, f"Execution{status.title().replace('_', '')}", detail=error or "")
        )

    def _run_machine(self, execution: Execution, definition: Definition) -> Generator[Blocked, None, JSON]:
        output = yield from self._run_graph(execution, definition, execution.input, None)
        return output

    def _run_graph(
        self, execution: Execution, graph: Definition, data: JSON, map_item: dict[str, Any] | None
    ) -> Generator[Blocked, None, JSON]:
        states: Mapping[str, Any] = graph["States"]
        name: str = graph["StartAt"]
        steps = 0
        while True:
            state = states[name]
            kind = state["Type"]
            where = f"{execution.name}.{name}"
            entered = self._now
            self._event(execution, f"{kind}StateEntered", name)
            steps += 1
            if steps > _MAX_STEPS_WITHOUT_WAIT:
                raise StatesError("States.Runtime", f"{where}: {steps} transitions without an end")
            context = execution.context_object(name, entered, 0)
            if map_item is not None:
                context["Map"] = {"Item": map_item}
            effective = asl_states.input_path(state, data, where)
            next_name: str | None = state.get("Next")
            if kind == "Pass":
                result = asl_states.pass_result(state, effective, context, where)
                output = asl_states.output(state, data, result, where)
            elif kind == "Choice":
                next_name = asl_states.choose(state, effective, context, where)
                output = asl_states.output_path(state, effective, where)
            elif kind == "Wait":
                until = asl_states.wait_until(state, effective, self._now, where)
                if until > self._now:
                    yield Blocked(until=until)
                output = asl_states.output_path(state, effective, where)
            elif kind == "Succeed":
                self._event(execution, "SucceedStateExited", name)
                return asl_states.output_path(state, effective, where)
            elif kind == "Fail":
                raise asl_states.failure(state, effective, where)
            elif kind in ("Task", "Map"):
                try:
                    if kind == "Task":
                        result = yield from self._task_with_retry(execution, state, effective, context, where)
                    else:
                        result = yield from self._map(execution, state, effective, context, where)
                    output = asl_states.output(state, data, result, where)
                except StatesError as failure:
                    catcher = next(
                        (c for c in state.get("Catch", ()) if error_matches(failure.error, c["ErrorEquals"])),
                        None,
                    )
                    if catcher is None:
                        raise
                    self._event(execution, f"{kind}StateExited", name, f"caught {failure.error}")
                    error_output = {"Error": failure.error, "Cause": failure.cause}
                    data = write_path(data, catcher.get("ResultPath", "$"), error_output, where)
                    name = catcher["Next"]
                    continue
            else:  # pragma: no cover - validate_definition refuses other types
                raise SimulatorError(f"{where}: unsupported state type {kind}")
            self._event(execution, f"{kind}StateExited", name)
            if state.get("End") or next_name is None:
                return output
            data = output
            name = next_name

    def _task_with_retry(
        self, execution: Execution, state: Mapping[str, Any], data: JSON, context: dict[str, Any], where: str
    ) -> Generator[Blocked, None, JSON]:
        attempts: dict[int, int] = {}
        while True:
            try:
                result = yield from self._task(execution, state, data, context, where)
            except StatesError as failure:
                retriers = state.get("Retry", ())
                index = next(
                    (i for i, r in enumerate(retriers) if error_matches(failure.error, r["ErrorEquals"])),
                    None,
                )
                if index is None:
                    raise
                done = attempts.get(index, 0)
                interval = asl_states.retry_delay(retriers[index], done)
                if interval is None:
                    raise
                attempts[index] = done + 1
                context["State"]["RetryCount"] = sum(attempts.values())
                yield Blocked(until=self._now + interval)
                continue
            if "ResultSelector" in state:
                result = resolve_template(state["ResultSelector"], result, context, f"{where}.ResultSelector")
            return result

    def _task(
        self, execution: Execution, state: Mapping[str, Any], data: JSON, context: dict[str, Any], where: str
    ) -> Generator[Blocked, None, JSON]:
        payload = asl_states.task_payload(state, data, context, where)
        resource: str = state["Resource"]
        if resource == START_EXECUTION_SYNC:
            result = yield from self._nested(execution, payload, where)
            return result
        if resource == START_EXECUTION:
            return self._detached(payload, where)
        self._event(execution, "LambdaFunctionScheduled", state=where)
        self._event(execution, "LambdaFunctionStarted", state=where)
        try:
            result = self._invoke(resource, payload)
        except StatesError as failure:  # the Lambda service's own errors (`Lambda.Unknown`...)
            self._event(execution, "LambdaFunctionFailed", state=where, detail=failure.error)
            raise
        except Exception as error:  # a Lambda function error: its class name is the state's error name
            name = type(error).__name__
            self._event(execution, "LambdaFunctionFailed", state=where, detail=name)
            raise StatesError(name, json.dumps({"errorMessage": str(error), "errorType": name})) from error
        self._event(execution, "LambdaFunctionSucceeded", state=where)
        return json_copy(result, f"{where} result")
        yield  # pragma: no cover - makes this a generator

    def _detached(self, payload: JSON, where: str) -> JSON:
        """`states:startExecution` without `.sync`: start the execution and go on without waiting for it."""
        if not isinstance(payload, dict):
            raise StatesError("States.Runtime", f"{where}: startExecution parameters must be an object")
        arn = str(payload.get("StateMachineArn"))
        definition = self._machines.get(arn)
        if definition is None:
            raise StatesError(
                "StepFunctions.StateMachineDoesNotExistException", f"{where}: no state machine {arn}"
            )
        name = str(payload.get("Name") or "")
        child_input = asl_states.child_input(payload)
        child = self._start(name, arn, definition, child_input, parent=None)
        if child is None:
            raise StatesError("StepFunctions.ExecutionAlreadyExistsException", f"{where}: {name} exists")
        return {"ExecutionArn": child.arn, "StartDate": iso_time(self._now)}

    def _nested(self, execution: Execution, payload: JSON, where: str) -> Generator[Blocked, None, JSON]:
        if not isinstance(payload, dict):
            raise StatesError("States.Runtime", f"{where}: startExecution parameters must be an object")
        arn = payload.get("StateMachineArn")
        definition = self._machines.get(str(arn))
        if definition is None:
            raise StatesError(
                "StepFunctions.StateMachineDoesNotExistException", f"{where}: no state machine {arn}"
            )
        name = str(payload.get("Name") or f"{execution.name}-child-{len(self._order)}")
        child_input = asl_states.child_input(payload)
        self._event(execution, "TaskScheduled", state=where)
        child = self._start(name, str(arn), definition, child_input, parent=execution)
        if child is None:
            existing = self._executions[(str(arn), name)]
            if existing.input != child_input:
                raise StatesError(
                    "StepFunctions.ExecutionAlreadyExistsException",
                    f"{where}: execution {name} already exists with another input",
                )
            child = existing
        self._event(execution, "TaskStarted", state=where)
        while not child.done:
            yield Blocked(children=(child,))
        if child.status != "SUCCEEDED":
            self._event(execution, "TaskFailed", state=where, detail=child.error or child.status)
            raise StatesError("States.TaskFailed", json.dumps(child.describe()))
        self._event(execution, "TaskSucceeded", state=where)
        return child.describe()

    def _map(
        self, execution: Execution, state: Mapping[str, Any], data: JSON, context: dict[str, Any], where: str
    ) -> Generator[Blocked, None, JSON]:
        items, limit = asl_states.map_items(state, data, where)
        processor: Definition = state.get("ItemProcessor") or state["Iterator"]
        selector = state.get("ItemSelector", state.get("Parameters"))
        results: list[JSON] = [None] * len(items)
        waiting = list(range(len(items)))
        active: dict[int, tuple[Generator[Blocked, None, JSON], Blocked | None]] = {}
        self._event(execution, "MapStateStarted", state=where, detail=f"{len(items)} items")
        while waiting or active:
            while waiting and (limit == 0 or len(active) < limit):
                index = waiting.pop(0)
                item = {"Index": index, "Value": items[index]}
                item_context = {**context, "Map": {"Item": item}}
                item_input = (
                    resolve_template(selector, data, item_context, f"{where}.ItemSelector")
                    if selector is not None
                    else items[index]
                )
                self._event(execution, "MapIterationStarted", state=where, detail=str(index))
                active[index] = (self._run_graph(execution, processor, item_input, item), None)
            progressed = False
            for index, (runner, blocked) in list(active.items()):
                if blocked is not None and not blocked.ready(self._now):
                    continue
                progressed = True
                try:
                    active[index] = (runner, next(runner))
                except StopIteration as stop:
                    results[index] = stop.value
                    del active[index]
                    self._event(execution, "MapIterationSucceeded", state=where, detail=str(index))
                except StatesError:
                    for other, _ in active.values():
                        other.close()
                    self._event(execution, "MapIterationFailed", state=where, detail=str(index))
                    raise
            if progressed:
                continue
            pending = [b for _, b in active.values() if b is not None]
            times = [b.until for b in pending if b.until is not None]
            children = tuple(c for b in pending for c in b.children)
            yield Blocked(until=min(times) if times else None, children=children)
        self._event(execution, "MapStateSucceeded", state=where)
        return results
