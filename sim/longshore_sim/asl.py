"""The Amazon States Language pieces the Step Functions simulator evaluates (`sim.stepfunctions`).

Rules, as the service applies them (JSONPath query language only):
- A reference path is `$` or `$$` followed by `.field` and `[index]` segments; anything else is refused with
  `SimulatorError` naming the state and field. A path that finds nothing is the runtime error
  `States.Runtime`.
- ResultPath `null` discards the result, `$` replaces the input, and a deeper path writes into a copy.
- Templates (Parameters, ResultSelector, ItemSelector): a key ending in `.$` takes the value at its path;
  intrinsic functions are refused.
- Choice rules compare only values of the comparison's type (a mismatch is false, not an error); timestamps
  compare as instants.
- `States.ALL` matches every error but `States.Runtime`; `States.TaskFailed` every task error but
  `States.Timeout`.
- `validate_definition` refuses, before anything runs, a state type, transition or Task resource outside the
  supported subset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

JSON = Any
Definition = Mapping[str, Any]

START_EXECUTION_SYNC: Final = "arn:aws:states:::states:startExecution.sync:2"
START_EXECUTION: Final = "arn:aws:states:::states:startExecution"  # fire and forget
_STATE_TYPES: Final = frozenset({"Task", "Choice", "Wait", "Pass", "Succeed", "Fail", "Map"})
_PATH_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


class SimulatorError(ValueError):
    """A definition or input the simulator cannot run (it names the state and the field)."""


class StatesError(Exception):
    """An error inside an execution, with the service's error name and cause."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


def parse_time(text: str, where: str) -> float:
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


def json_copy(value: JSON, where: str) -> JSON:
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


def is_typed(value: Any, kind: type | tuple[type, ...]) -> bool:
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
            matches = value is None if test == "IsNull" else is_typed(value, kind)
            return matches is bool(rule[test])
    for name, (kind, compare) in _COMPARISONS.items():
        for key, by_path in ((name, False), (f"{name}Path", True)):
            if key not in rule:
                continue
            expected = read_path(data, rule[key], f"{where}.{key}", context) if by_path else rule[key]
            if not (is_typed(value, kind) and is_typed(expected, kind)):
                return False
            if name.startswith("Timestamp"):
                return compare(parse_time(value, where), parse_time(expected, where))
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
