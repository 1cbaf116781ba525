"""What each ASL state does to its data, as pure functions the Step Functions simulator (`sim.stepfunctions`)
calls; the simulator keeps the executions, the history and the time.

Rules, as the service applies them (JSONPath query language only, on top of `sim.asl`'s paths and templates):

- A state's input is filtered by InputPath first (absent: the whole input; `null`: `{}`). A Pass or a Task
  result is then placed by ResultPath into the state's *raw* input, and the combination filtered by OutputPath
  (absent: all of it; `null`: `{}`). Choice and Wait have no result: their output is their effective input
  through OutputPath.
- A Pass answers its `Result` when it has one, else its Parameters resolved against the effective input, else
  the effective input.
- A Choice takes the first rule that matches, in order, else its Default; with neither it fails with
  `States.NoChoiceMatched`.
- A Wait ends `Seconds` (or `SecondsPath`, which must be a number >= 0, else `States.Runtime`) after `now`, or
  at `Timestamp` / `TimestampPath`; a Wait with none of the four is refused as a `SimulatorError`.
- A Fail raises its Error and Cause (or the values at ErrorPath and CausePath), `States.Fail` and "" when
  neither is given.
- The n-th retry of a Retrier (n from 0) waits `IntervalSeconds * BackoffRate ** n` (defaults 1 and 2.0),
  capped at `MaxDelaySeconds` when given; a Retrier allows `MaxAttempts` (default 3) retries.
- A Task's payload is its Parameters resolved against the effective input (absent: the effective input), always
  deep-copied as JSON, so no step can change the data of the execution it runs in.
- A Map's items are the array at ItemsPath (default `$`; anything else is `States.Runtime`) and its limit
  `MaxConcurrency` or the integer at `MaxConcurrencyPath` (`0` is unbounded; a non-integer or negative is
  `States.Runtime`). A nested execution's `Input` may be an object or a JSON string of one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from longshore_sim.asl import (
    JSON,
    SimulatorError,
    StatesError,
    evaluate_rule,
    is_typed,
    json_copy,
    parse_time,
    read_path,
    resolve_template,
    write_path,
)


def input_path(state: Mapping[str, Any], data: JSON, where: str) -> JSON:
    if "InputPath" not in state:
        return data
    path = state["InputPath"]
    return {} if path is None else read_path(data, path, f"{where}.InputPath")


def output_path(state: Mapping[str, Any], data: JSON, where: str) -> JSON:
    if "OutputPath" not in state:
        return data
    path = state["OutputPath"]
    return {} if path is None else read_path(data, path, f"{where}.OutputPath")


def output(state: Mapping[str, Any], raw_input: JSON, result: JSON, where: str) -> JSON:
    combined = write_path(raw_input, state.get("ResultPath", "$"), result, f"{where}.ResultPath")
    return output_path(state, combined, where)


def pass_result(state: Mapping[str, Any], effective: JSON, context: JSON, where: str) -> JSON:
    result = (
        resolve_template(state["Parameters"], effective, context, f"{where}.Parameters")
        if "Parameters" in state
        else effective
    )
    return state.get("Result", result)


def choose(state: Mapping[str, Any], data: JSON, context: JSON, where: str) -> str:
    for index, rule in enumerate(state.get("Choices", ())):
        if evaluate_rule(rule, data, context, f"{where}.Choices[{index}]"):
            return str(rule["Next"])
    if "Default" in state:
        return str(state["Default"])
    raise StatesError("States.NoChoiceMatched", f"{where}: no Choice rule matched and there is no Default")


def wait_until(state: Mapping[str, Any], data: JSON, now: float, where: str) -> float:
    if "Seconds" in state:
        return now + float(state["Seconds"])
    if "SecondsPath" in state:
        seconds = read_path(data, state["SecondsPath"], f"{where}.SecondsPath")
        if not is_typed(seconds, (int, float)) or seconds < 0:
            raise StatesError("States.Runtime", f"{where}: SecondsPath gave {seconds!r}, not seconds >= 0")
        return now + float(seconds)
    if "Timestamp" in state:
        return parse_time(str(state["Timestamp"]), where)
    if "TimestampPath" in state:
        return parse_time(str(read_path(data, state["TimestampPath"], f"{where}.TimestampPath")), where)
    raise SimulatorError(f"{where}: a Wait needs Seconds, SecondsPath, Timestamp or TimestampPath")


def failure(state: Mapping[str, Any], effective: JSON, where: str) -> StatesError:
    """The error a Fail state raises."""
    error = state.get("Error") or (
        read_path(effective, state["ErrorPath"], where) if "ErrorPath" in state else "States.Fail"
    )
    cause = state.get("Cause") or (
        read_path(effective, state["CausePath"], where) if "CausePath" in state else ""
    )
    return StatesError(str(error), str(cause))


def retry_delay(retrier: Mapping[str, Any], done: int) -> float | None:
    """The wait before the next retry of a Retrier that has retried `done` times, or None when it is spent."""
    if done >= int(retrier.get("MaxAttempts", 3)):
        return None
    interval = float(retrier.get("IntervalSeconds", 1)) * float(retrier.get("BackoffRate", 2.0)) ** done
    if "MaxDelaySeconds" in retrier:
        interval = min(interval, float(retrier["MaxDelaySeconds"]))
    return interval


def task_payload(state: Mapping[str, Any], data: JSON, context: JSON, where: str) -> JSON:
    payload = (
        resolve_template(state["Parameters"], data, context, f"{where}.Parameters")
        if "Parameters" in state
        else data
    )
    return json_copy(payload, f"{where}.Parameters")


def child_input(payload: Mapping[str, Any]) -> JSON:
    """The `Input` of a nested execution's parameters (a JSON string is parsed)."""
    value = payload.get("Input", {})
    return json.loads(value) if isinstance(value, str) else value


def map_items(state: Mapping[str, Any], data: JSON, where: str) -> tuple[list[JSON], int]:
    """A Map state's items and its concurrency limit (0: unbounded)."""
    items = read_path(data, state.get("ItemsPath", "$"), f"{where}.ItemsPath")
    if not isinstance(items, list):
        raise StatesError("States.Runtime", f"{where}: ItemsPath gave {type(items).__name__}, not an array")
    if "MaxConcurrencyPath" in state:
        limit = read_path(data, state["MaxConcurrencyPath"], f"{where}.MaxConcurrencyPath")
    else:
        limit = state.get("MaxConcurrency", 0)
    if not is_typed(limit, int) or limit < 0:
        raise StatesError("States.Runtime", f"{where}: MaxConcurrency {limit!r} is not an integer >= 0")
    return items, limit
