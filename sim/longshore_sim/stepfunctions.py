"""A virtual-time Step Functions executor for the simulation: the JSONPath ASL subset Longshore deploys.

Theory of operation. `StepFunctionsSimulator` interprets Amazon States Language documents (the very dicts
`workflow.definition` returns and CDK deploys) without threads or sleeping. Each execution is a Python
generator walking the state graph; whenever the real service would wait (a Wait state, a Retry back-off, a
nested `startExecution.sync:2` child, Map iterations in flight) the generator yields a `_Blocked` value
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

Execution names are unique per state machine: `start_execution` returns False for a name already used, like
the real `StartExecution` (the idempotency key of every disruption). `SimulatedWorkflows` implements the
`DisruptionWorkflow` and `RotationWorkflow` ports on top of it, with `workflow.definition`'s real documents.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from longshore.core.commands import (
    MAX_ATTEMPTS,
    RESTARTABLE_STATUSES,
    DisruptionCommand,
    RotationRequest,
    attempt_name,
)
from longshore.ports.metrics import MetricsSink
from longshore.ports.workflow import StartResult

JSON = Any
Definition = Mapping[str, Any]
TaskInvoker = Callable[[str, JSON], JSON]

START_EXECUTION_SYNC: Final = "arn:aws:states:::states:startExecution.sync:2"
START_EXECUTION: Final = "arn:aws:states:::states:startExecution"  # fire and forget
MAX_HISTORY_EVENTS: Final = 25_000
REGION: Final = "us-east-1"
ACCOUNT: Final = "123456789012"
DEFAULT_STEPS_ARN: Final = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:longshore-workflow-steps"
DEFAULT_DISRUPTION_ARN: Final = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:longshore-disruption"
DEFAULT_ROTATION_ARN: Final = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:longshore-rotation"
ANONYMOUS_ARN: Final = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:anonymous"

_STATE_TYPES: Final = frozenset({"Task", "Choice", "Wait", "Pass", "Succeed", "Fail", "Map"})
_PATH_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
_MAX_STEPS_WITHOUT_WAIT: Final = 100_000


class SimulatorError(ValueError):
    """A definition or input the simulator cannot run (it names the state and the field)."""


class StatesError(Exception):
    """An error inside an execution, with the service's error name and cause."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


class _Clock(Protocol):
    def now(self) -> float: ...


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    at: float
    type: str
    state: str = ""
    detail: str = ""


@dataclass(eq=False)
class Execution:
    """One execution: its identity, status, result and history (read these from tests and reports)."""

    name: str
    state_machine_arn: str
    input: JSON
    started_at: float
    timeout_seconds: float | None = None
    status: str = "RUNNING"  # RUNNING | SUCCEEDED | FAILED | TIMED_OUT
    output: JSON = None
    error: str | None = None
    cause: str | None = None
    stopped_at: float | None = None
    history: list[HistoryEvent] = field(default_factory=list)
    parent: Execution | None = None
    _runner: Generator[_Blocked, None, JSON] | None = field(default=None, repr=False)
    _blocked: _Blocked | None = field(default=None, repr=False)

    @property
    def arn(self) -> str:
        return f"{self.state_machine_arn.replace(':stateMachine:', ':execution:', 1)}:{self.name}"

    @property
    def done(self) -> bool:
        return self.status != "RUNNING"

    def describe(self) -> dict[str, Any]:
        """What `DescribeExecution` answers (the shape nested `.sync:2` tasks receive)."""
        described: dict[str, Any] = {
            "ExecutionArn": self.arn,
            "StateMachineArn": self.state_machine_arn,
            "Name": self.name,
            "Status": self.status,
            "StartDate": _iso(self.started_at),
            "Input": self.input,
        }
        if self.stopped_at is not None:
            described["StopDate"] = _iso(self.stopped_at)
        if self.status == "SUCCEEDED":
            described["Output"] = self.output
        if self.error is not None:
            described["Error"] = self.error
            described["Cause"] = self.cause or ""
        return described


@dataclass(frozen=True, slots=True)
class _Blocked:
    """Why a generator paused: until a time, and/or until one of some executions ends."""

    until: float | None = None
    children: tuple[Execution, ...] = ()

    def ready(self, now: float) -> bool:
        if self.until is not None and self.until <= now:
            return True
        return any(child.done for child in self.children)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _parse_time(text: str, where: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError as error:
        raise StatesError("States.Runtime", f"{where}: {text!r} is not an RFC 3339 timestamp") from error


# -- JSONPath (the reference-path subset ASL allows) --------------------------------------------------------


def _segments(path: str, where: str) -> list[str | int]:
    root = "$$" if path.startswith("$$") else "$"
    rest = path[len(root) :]
    out: list[str | int] = []
    position = 0
    for match in _PATH_SEGMENT.finditer(rest):
        if match.start() != position:
            break
        out.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        position = match.end()
    if position != len(rest) or not path.startswith("$"):
        raise SimulatorError(f"{where}: {path!r} is not a JSONPath reference path this simulator supports")
    return out


def read_path(data: JSON, path: str, where: str, context: JSON = None) -> JSON:
    """The value at `path` in `data` (or in the context object for `$$...`); States.Runtime when absent."""
    value = context if path.startswith("$$") else data
    for segment in _segments(path, where):
        found = (isinstance(segment, int) and isinstance(value, list) and segment < len(value)) or (
            isinstance(segment, str) and isinstance(value, dict) and segment in value
        )
        if found:
            value = value[segment]
        else:
            raise StatesError(
                "States.Runtime", f"{where}: the JSONPath {path!r} could not be found in the input"
            )
    return value


def _has_path(data: JSON, path: str) -> bool:
    try:
        read_path(data, path, "IsPresent")
    except StatesError:
        return False
    return True


def write_path(data: JSON, path: str | None, value: JSON, where: str) -> JSON:
    """`data` with `value` placed at ResultPath `path` ("$" replaces it; None discards `value`)."""
    if path is None:
        return data
    segments = _segments(path, where)
    if not segments:
        return value
    if not isinstance(data, dict):
        raise StatesError(
            "States.Runtime", f"{where}: cannot apply ResultPath {path!r} to a non-object input"
        )
    root: dict[str, Any] = dict(data)
    target = root
    for segment in segments[:-1]:
        if not isinstance(segment, str):
            raise SimulatorError(f"{where}: ResultPath {path!r} may not index arrays")
        child = target.get(segment)
        child = dict(child) if isinstance(child, dict) else {}
        target[segment] = child
        target = child
    last = segments[-1]
    if not isinstance(last, str):
        raise SimulatorError(f"{where}: ResultPath {path!r} may not index arrays")
    target[last] = value
    return root


def resolve_template(template: JSON, data: JSON, context: JSON, where: str) -> JSON:
    """Parameters / ResultSelector / ItemSelector: keys ending in `.$` take the value at their path."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                if not isinstance(value, str):
                    raise SimulatorError(f"{where}: field {key!r} must be a path string, got {value!r}")
                if value.startswith("States."):
                    raise SimulatorError(f"{where}: intrinsic function {value!r} is not supported")
                out[key[:-2]] = read_path(data, value, f"{where}.{key}", context)
            else:
                out[key] = resolve_template(value, data, context, f"{where}.{key}")
        return out
    if isinstance(template, list):
        return [resolve_template(v, data, context, where) for v in template]
    return template


def _json_copy(value: JSON, where: str) -> JSON:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as error:
        raise StatesError("States.Runtime", f"{where}: the value is not JSON: {error}") from error


# -- Choice rules -------------------------------------------------------------------------------------------

_COMPARISONS: Final[Mapping[str, tuple[type | tuple[type, ...], Callable[[Any, Any], bool]]]] = {
    "StringEquals": (str, lambda a, b: a == b),
    "StringLessThan": (str, lambda a, b: a < b),
    "StringGreaterThan": (str, lambda a, b: a > b),
    "StringLessThanEquals": (str, lambda a, b: a <= b),
    "StringGreaterThanEquals": (str, lambda a, b: a >= b),
    "NumericEquals": ((int, float), lambda a, b: a == b),
    "NumericLessThan": ((int, float), lambda a, b: a < b),
    "NumericGreaterThan": ((int, float), lambda a, b: a > b),
    "NumericLessThanEquals": ((int, float), lambda a, b: a <= b),
    "NumericGreaterThanEquals": ((int, float), lambda a, b: a >= b),
    "BooleanEquals": (bool, lambda a, b: a is b),
    "TimestampEquals": (str, lambda a, b: a == b),
    "TimestampLessThan": (str, lambda a, b: a < b),
    "TimestampGreaterThan": (str, lambda a, b: a > b),
    "TimestampLessThanEquals": (str, lambda a, b: a <= b),
    "TimestampGreaterThanEquals": (str, lambda a, b: a >= b),
}


def _typed(value: Any, kind: type | tuple[type, ...]) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    return isinstance(value, kind) and not isinstance(value, bool)


def evaluate_rule(rule: Mapping[str, Any], data: JSON, context: JSON, where: str) -> bool:
    """One Choice rule against the state's input."""
    if "And" in rule:
        return all(evaluate_rule(r, data, context, where) for r in rule["And"])
    if "Or" in rule:
        return any(evaluate_rule(r, data, context, where) for r in rule["Or"])
    if "Not" in rule:
        return not evaluate_rule(rule["Not"], data, context, where)
    variable = rule.get("Variable")
    if not isinstance(variable, str):
        raise SimulatorError(f"{where}: a Choice rule needs a Variable (got {dict(rule)!r})")
    if "IsPresent" in rule:
        return _has_path(data, variable) is bool(rule["IsPresent"])
    value = read_path(data, variable, f"{where}.Variable", context)
    type_tests: tuple[tuple[str, type | tuple[type, ...]], ...] = (
        ("IsNull", type(None)),
        ("IsString", str),
        ("IsNumeric", (int, float)),
        ("IsBoolean", bool),
    )
    for test, kind in type_tests:
        if test in rule:
            matches = value is None if test == "IsNull" else _typed(value, kind)
            return matches is bool(rule[test])
    for name, (kind, compare) in _COMPARISONS.items():
        for key, by_path in ((name, False), (f"{name}Path", True)):
            if key not in rule:
                continue
            expected = read_path(data, rule[key], f"{where}.{key}", context) if by_path else rule[key]
            if not (_typed(value, kind) and _typed(expected, kind)):
                return False
            if name.startswith("Timestamp"):
                return compare(_parse_time(value, where), _parse_time(expected, where))
            return compare(value, expected)
    raise SimulatorError(f"{where}: unsupported Choice comparison in {dict(rule)!r}")


# -- error matching -----------------------------------------------------------------------------------------


def error_matches(error: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if pattern == error:
            return True
        if pattern == "States.ALL" and error != "States.Runtime":
            return True
        if pattern == "States.TaskFailed" and error not in ("States.Runtime", "States.Timeout"):
            return True
    return False


def validate_definition(definition: Definition, where: str = "definition") -> None:
    """Refuse documents outside the supported subset before anything runs (names the state and field)."""
    if definition.get("QueryLanguage", "JSONPath") != "JSONPath":
        raise SimulatorError(
            f"{where}: QueryLanguage {definition.get('QueryLanguage')!r}; only JSONPath runs here"
        )
    states = definition.get("States")
    start = definition.get("StartAt")
    if not isinstance(states, Mapping) or start not in states:
        raise SimulatorError(f"{where}: StartAt {start!r} names no state in States")
    for name, state in states.items():
        here = f"{where}.States.{name}"
        kind = state.get("Type")
        if kind not in _STATE_TYPES:
            raise SimulatorError(
                f"{here}: field 'Type' has value {kind!r}; supported: {sorted(_STATE_TYPES)}"
            )
        targets = [state.get("Next"), state.get("Default")]
        targets += [c.get("Next") for c in state.get("Choices", ())]
        targets += [c.get("Next") for c in state.get("Catch", ())]
        for target in targets:
            if target is not None and target not in states:
                raise SimulatorError(f"{here}: transition to {target!r}, which is not a state")
        if kind == "Map":
            processor = state.get("ItemProcessor") or state.get("Iterator")
            if not isinstance(processor, Mapping):
                raise SimulatorError(f"{here}: a Map needs an ItemProcessor")
            validate_definition(processor, f"{here}.ItemProcessor")
        if kind == "Task":
            resource = state.get("Resource")
            if not isinstance(resource, str) or not (
                resource in (START_EXECUTION_SYNC, START_EXECUTION) or resource.startswith("arn:aws:lambda:")
            ):
                raise SimulatorError(
                    f"{here}: field 'Resource' has value {resource!r}; supported: a Lambda function ARN or "
                    f"{START_EXECUTION_SYNC}"
                )


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
        data = _json_copy(input, f"execution {name} input")
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

    def _context(self, execution: Execution, state: str, entered: float, retries: int) -> dict[str, Any]:
        return {
            "Execution": {
                "Id": execution.arn,
                "Name": execution.name,
                "Input": execution.input,
                "StartTime": _iso(execution.started_at),
            },
            "StateMachine": {
                "Id": execution.state_machine_arn,
                "Name": execution.state_machine_arn.rsplit(":", 1)[-1],
            },
            "State": {"Name": state, "EnteredTime": _iso(entered), "RetryCount": retries},
        }

    def _run_machine(self, execution: Execution, definition: Definition) -> Generator[_Blocked, None, JSON]:
        output = yield from self._run_graph(execution, definition, execution.input, None)
        return output

    def _run_graph(
        self, execution: Execution, graph: Definition, data: JSON, map_item: dict[str, Any] | None
    ) -> Generator[_Blocked, None, JSON]:
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
            context = self._context(execution, name, entered, 0)
            if map_item is not None:
                context["Map"] = {"Item": map_item}
            effective = self._input_path(state, data, where)
            next_name: str | None = state.get("Next")
            if kind == "Pass":
                result = (
                    resolve_template(state["Parameters"], effective, context, f"{where}.Parameters")
                    if "Parameters" in state
                    else effective
                )
                result = state.get("Result", result)
                output = self._output(state, data, result, where)
            elif kind == "Choice":
                next_name = self._choose(state, effective, context, where)
                output = self._output_path(state, effective, where)
            elif kind == "Wait":
                until = self._wait_until(state, effective, where)
                if until > self._now:
                    yield _Blocked(until=until)
                output = self._output_path(state, effective, where)
            elif kind == "Succeed":
                self._event(execution, "SucceedStateExited", name)
                return self._output_path(state, effective, where)
            elif kind == "Fail":
                error = state.get("Error") or (
                    read_path(effective, state["ErrorPath"], where) if "ErrorPath" in state else "States.Fail"
                )
                cause = state.get("Cause") or (
                    read_path(effective, state["CausePath"], where) if "CausePath" in state else ""
                )
                raise StatesError(str(error), str(cause))
            elif kind in ("Task", "Map"):
                try:
                    if kind == "Task":
                        result = yield from self._task_with_retry(execution, state, effective, context, where)
                    else:
                        result = yield from self._map(execution, state, effective, context, where)
                    output = self._output(state, data, result, where)
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

    # -- state helpers ----------------------------------------------------------------------------------------
    @staticmethod
    def _input_path(state: Mapping[str, Any], data: JSON, where: str) -> JSON:
        if "InputPath" not in state:
            return data
        path = state["InputPath"]
        return {} if path is None else read_path(data, path, f"{where}.InputPath")

    @staticmethod
    def _output_path(state: Mapping[str, Any], data: JSON, where: str) -> JSON:
        if "OutputPath" not in state:
            return data
        path = state["OutputPath"]
        return {} if path is None else read_path(data, path, f"{where}.OutputPath")

    def _output(self, state: Mapping[str, Any], raw_input: JSON, result: JSON, where: str) -> JSON:
        combined = write_path(raw_input, state.get("ResultPath", "$"), result, f"{where}.ResultPath")
        return self._output_path(state, combined, where)

    @staticmethod
    def _choose(state: Mapping[str, Any], data: JSON, context: JSON, where: str) -> str:
        for index, rule in enumerate(state.get("Choices", ())):
            if evaluate_rule(rule, data, context, f"{where}.Choices[{index}]"):
                return str(rule["Next"])
        if "Default" in state:
            return str(state["Default"])
        raise StatesError(
            "States.NoChoiceMatched", f"{where}: no Choice rule matched and there is no Default"
        )

    def _wait_until(self, state: Mapping[str, Any], data: JSON, where: str) -> float:
        if "Seconds" in state:
            return self._now + float(state["Seconds"])
        if "SecondsPath" in state:
            seconds = read_path(data, state["SecondsPath"], f"{where}.SecondsPath")
            if not _typed(seconds, (int, float)) or seconds < 0:
                raise StatesError(
                    "States.Runtime", f"{where}: SecondsPath gave {seconds!r}, not seconds >= 0"
                )
            return self._now + float(seconds)
        if "Timestamp" in state:
            return _parse_time(str(state["Timestamp"]), where)
        if "TimestampPath" in state:
            return _parse_time(str(read_path(data, state["TimestampPath"], f"{where}.TimestampPath")), where)
        raise SimulatorError(f"{where}: a Wait needs Seconds, SecondsPath, Timestamp or TimestampPath")

    def _task_with_retry(
        self, execution: Execution, state: Mapping[str, Any], data: JSON, context: dict[str, Any], where: str
    ) -> Generator[_Blocked, None, JSON]:
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
                retrier = retriers[index]
                done = attempts.get(index, 0)
                if done >= int(retrier.get("MaxAttempts", 3)):
                    raise
                interval = (
                    float(retrier.get("IntervalSeconds", 1)) * float(retrier.get("BackoffRate", 2.0)) ** done
                )
                if "MaxDelaySeconds" in retrier:
                    interval = min(interval, float(retrier["MaxDelaySeconds"]))
                attempts[index] = done + 1
                context["State"]["RetryCount"] = sum(attempts.values())
                yield _Blocked(until=self._now + interval)
                continue
            if "ResultSelector" in state:
                result = resolve_template(state["ResultSelector"], result, context, f"{where}.ResultSelector")
            return result

    def _task(
        self, execution: Execution, state: Mapping[str, Any], data: JSON, context: dict[str, Any], where: str
    ) -> Generator[_Blocked, None, JSON]:
        payload = (
            resolve_template(state["Parameters"], data, context, f"{where}.Parameters")
            if "Parameters" in state
            else data
        )
        payload = _json_copy(payload, f"{where}.Parameters")
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
        return _json_copy(result, f"{where} result")
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
        child_input = payload.get("Input", {})
        if isinstance(child_input, str):
            child_input = json.loads(child_input)
        child = self._start(name, arn, definition, child_input, parent=None)
        if child is None:
            raise StatesError("StepFunctions.ExecutionAlreadyExistsException", f"{where}: {name} exists")
        return {"ExecutionArn": child.arn, "StartDate": _iso(self._now)}

    def _nested(self, execution: Execution, payload: JSON, where: str) -> Generator[_Blocked, None, JSON]:
        if not isinstance(payload, dict):
            raise StatesError("States.Runtime", f"{where}: startExecution parameters must be an object")
        arn = payload.get("StateMachineArn")
        definition = self._machines.get(str(arn))
        if definition is None:
            raise StatesError(
                "StepFunctions.StateMachineDoesNotExistException", f"{where}: no state machine {arn}"
            )
        name = str(payload.get("Name") or f"{execution.name}-child-{len(self._order)}")
        child_input = payload.get("Input", {})
        if isinstance(child_input, str):
            child_input = json.loads(child_input)
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
            yield _Blocked(children=(child,))
        if child.status != "SUCCEEDED":
            self._event(execution, "TaskFailed", state=where, detail=child.error or child.status)
            raise StatesError("States.TaskFailed", json.dumps(child.describe()))
        self._event(execution, "TaskSucceeded", state=where)
        return child.describe()

    def _map(
        self, execution: Execution, state: Mapping[str, Any], data: JSON, context: dict[str, Any], where: str
    ) -> Generator[_Blocked, None, JSON]:
        items = read_path(data, state.get("ItemsPath", "$"), f"{where}.ItemsPath")
        if not isinstance(items, list):
            raise StatesError(
                "States.Runtime", f"{where}: ItemsPath gave {type(items).__name__}, not an array"
            )
        if "MaxConcurrencyPath" in state:
            limit = read_path(data, state["MaxConcurrencyPath"], f"{where}.MaxConcurrencyPath")
        else:
            limit = state.get("MaxConcurrency", 0)
        if not _typed(limit, int) or limit < 0:
            raise StatesError("States.Runtime", f"{where}: MaxConcurrency {limit!r} is not an integer >= 0")
        processor: Definition = state.get("ItemProcessor") or state["Iterator"]
        selector = state.get("ItemSelector", state.get("Parameters"))
        results: list[JSON] = [None] * len(items)
        waiting = list(range(len(items)))
        active: dict[int, tuple[Generator[_Blocked, None, JSON], _Blocked | None]] = {}
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
            yield _Blocked(until=min(times) if times else None, children=children)
        self._event(execution, "MapStateSucceeded", state=where)
        return results


# -- the workflow ports on the simulator --------------------------------------------------------------------


def steps_invoker(ports: Any, sink: MetricsSink | None = None) -> TaskInvoker:
    """A Task invoker running `workflow_steps.process_step` in process against `ports` (`StepPorts`)."""
    from longshore.adapters.memory_metrics import MemoryMetricsSink
    from longshore.wiring.workflow_steps import process_step

    metrics: MetricsSink = sink if sink is not None else MemoryMetricsSink()

    def invoke(resource: str, payload: JSON) -> JSON:
        return process_step(payload, ports, metrics)

    return invoke


class SimulatedWorkflows:
    """`DisruptionWorkflow` and `RotationWorkflow` on the simulator, running `workflow.definition`'s documents.

    `start_surge` starts a disruption whose replacement was already launched (the planner launches planned
    replacements itself): the execution input carries the replacement claim, so the workflow waits for it to
    be initialized before tainting.
    """

    def __init__(
        self,
        simulator: StepFunctionsSimulator,
        *,
        steps_arn: str = DEFAULT_STEPS_ARN,
        disruption_arn: str = DEFAULT_DISRUPTION_ARN,
        rotation_arn: str = DEFAULT_ROTATION_ARN,
    ) -> None:
        from longshore.workflow.definition import disruption_definition, rotation_definition

        self.simulator = simulator
        self.disruption_arn = disruption_arn
        self.rotation_arn = rotation_arn
        simulator.register(disruption_arn, disruption_definition(steps_arn))
        simulator.register(rotation_arn, rotation_definition(steps_arn, disruption_arn))

    def _start(self, arn: str, name: str, payload: JSON) -> StartResult:
        started = self.simulator.start_execution(name, None, payload, state_machine_arn=arn)
        return StartResult(started, name, self.simulator.execution(name, arn).arn)

    def start(self, command: DisruptionCommand) -> StartResult:
        """As the Step Functions adapter: a failed, aborted or timed-out execution is started again under
        `attempt_name`; a running or succeeded one makes the start a no-op."""
        base = command.execution_name()
        name = base
        for attempt in range(1, MAX_ATTEMPTS + 1):
            name = attempt_name(base, attempt)
            known = {e.name: e for e in self.simulator.executions(self.disruption_arn)}.get(name)
            if known is None or known.status not in RESTARTABLE_STATUSES:
                break
        return self._start(self.disruption_arn, name, command.to_input())

    def start_surge(
        self, command: DisruptionCommand, replacement_claim_id: str, give_up_at: float | None
    ) -> StartResult:
        from longshore.workflow.state import ReplacementProgress

        progress = ReplacementProgress(replacement_claim_id, "launching", 0, give_up_at)
        payload = {**command.to_input(), "replacement": progress.to_json()}
        return self._start(self.disruption_arn, command.execution_name(), payload)

    def start_rotation(self, request: RotationRequest) -> StartResult:
        return self._start(self.rotation_arn, request.execution_name(), request.to_input())

    def disruptions(self) -> tuple[Execution, ...]:
        return self.simulator.executions(self.disruption_arn)

    def rotations(self) -> tuple[Execution, ...]:
        return self.simulator.executions(self.rotation_arn)
