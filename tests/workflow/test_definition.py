"""The state machine definitions: valid ASL (asl-validator, moto's parser), a sound graph, and wiring that
matches the steps (every step exists, every routed value is one a step produces, every caught error is one
a step raises)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, get_args

import pytest
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

from longshore.workflow import errors
from longshore.workflow.definition import disruption_definition, rotation_definition
from longshore.workflow.state import DrainStatus, ReplacementStatus, TerminationStatus
from longshore.workflow.steps import STEPS
from tests.conftest import REPO

FN = "arn:aws:lambda:us-east-1:123456789012:function:longshore-workflow-steps"
SM = "arn:aws:states:us-east-1:123456789012:stateMachine:longshore-disruption"
VALIDATOR = REPO / ".cdk-cli" / "node_modules" / ".bin" / "asl-validator"
DEFINITIONS = {"disruption": disruption_definition(FN), "rotation": rotation_definition(FN, SM)}


def _targets(state: dict[str, Any]) -> list[str]:
    found = [state[k] for k in ("Next", "Default") if k in state]
    found += [c["Next"] for c in state.get("Choices", [])]
    found += [c["Next"] for c in state.get("Catch", [])]
    return found


def _all_states(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    states = dict(definition["States"])
    for state in definition["States"].values():
        if state["Type"] == "Map":
            states.update(_all_states(state["ItemProcessor"]))
    return states


def _reachable(definition: dict[str, Any]) -> set[str]:
    seen, todo = set(), [definition["StartAt"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += _targets(definition["States"][name])
    return seen


def test_asl_validator_accepts_both_and_rejects_a_broken_one(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not VALIDATOR.exists():
        pytest.skip(f"asl-validator needs node and {VALIDATOR}")
    broken = json.loads(json.dumps(DEFINITIONS["disruption"]))
    broken["States"]["Taint"]["Next"] = "Nowhere"
    paths = []
    for name, definition in [*DEFINITIONS.items(), ("broken", broken)]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(definition))
        paths += ["--json-path", str(path)]
    run = subprocess.run([str(VALIDATOR), *paths], capture_output=True, text=True, timeout=60, check=False)
    report = run.stdout + run.stderr
    assert f'"{tmp_path / "disruption.json"}" is valid' in report, report
    assert f'"{tmp_path / "rotation.json"}" is valid' in report, report
    assert f'"{tmp_path / "broken.json"}" is invalid' in report and "Nowhere" in report, report


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_moto_parser_accepts(name: str) -> None:
    program, _ = AmazonStateLanguageParser.parse(json.dumps(DEFINITIONS[name]))
    assert program is not None


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_graph_every_target_exists_and_every_state_is_reachable(name: str) -> None:
    definition = DEFINITIONS[name]
    states = definition["States"]
    for state_name, state in states.items():
        for target in _targets(state):
            assert target in states, f"{state_name} -> {target}"
        assert state.get("End") or _targets(state) or state["Type"] in ("Succeed", "Fail"), state_name
    assert _reachable(definition) == set(states)


@pytest.mark.parametrize("name", sorted(DEFINITIONS))
def test_every_task_calls_a_real_step_and_is_json_path(name: str) -> None:
    definition = DEFINITIONS[name]
    assert "QueryLanguage" not in definition or definition["QueryLanguage"] == "JSONPath"
    for state in _all_states(definition).values():
        if state["Type"] == "Task" and state["Resource"] == FN:
            assert state["Parameters"]["step"] in STEPS
            assert state["Parameters"]["state.$"] == "$"


def test_choices_route_on_values_the_steps_produce() -> None:
    produced = {
        "$.replacement.status": set(get_args(ReplacementStatus)),
        "$.drain.status": set(get_args(DrainStatus)),
        "$.termination.status": set(get_args(TerminationStatus)),
    }
    seen = 0
    for state in _all_states(DEFINITIONS["disruption"]).values():
        for choice in state.get("Choices", []):
            for rule in choice.get("And", [choice]):
                if "StringEquals" in rule:
                    assert rule["StringEquals"] in produced[rule["Variable"]]
                    seen += 1
    # replacement initialized; drain drained, superseded, continued (in Drained and in Resumed); terminated
    assert seen == 6


def test_errors_before_terminate_roll_back_and_termination_errors_abort_to_a_fail_state() -> None:
    states = DEFINITIONS["disruption"]["States"]

    def caught_by(handler: str) -> set[str]:
        return {name for name, s in states.items() if any(c["Next"] == handler for c in s.get("Catch", []))}

    assert caught_by("Rollback") == {
        "LaunchReplacement",
        "CheckReplacement",
        "Taint",
        "Drain",
        "ContinueDrain",
    }
    assert caught_by("AbortTermination") == {"Terminate", "CheckTermination"}
    assert states["AbortTermination"]["Next"] == "TerminationFailed"
    assert states["TerminationFailed"]["Type"] == "Fail"
    assert "Catch" not in states["Validate"]  # nothing to undo yet; a taint found there is someone else's
    for name in ("Finalize", "Rollback", "AbortTermination"):
        assert "Catch" not in states[name]


def test_retried_errors_exist() -> None:
    for name in errors.RETRYABLE_ERRORS:
        assert name.startswith("Lambda.") or hasattr(errors, name) or name == "ClusterUnavailableError"


def test_waits_are_wait_states_and_the_drain_wait_is_computed_by_the_step() -> None:
    states = DEFINITIONS["disruption"]["States"]
    waits = {name: s for name, s in states.items() if s["Type"] == "Wait"}
    assert set(waits) == {"WaitForReplacement", "WaitForDrain", "WaitForTermination", "WaitToRetry"}
    assert waits["WaitToRetry"]["SecondsPath"] == "$.rollback.waitSeconds"
    assert waits["WaitForDrain"]["SecondsPath"] == "$.drain.waitSeconds"
    assert DEFINITIONS["disruption"]["TimeoutSeconds"] > 0 and DEFINITIONS["rotation"]["TimeoutSeconds"] > 0


def test_rotation_bounds_concurrency_by_max_unavailable_and_nests_the_disruption() -> None:
    states = DEFINITIONS["rotation"]["States"]
    assert states["RotateRest"]["MaxConcurrencyPath"] == "$.maxUnavailable"
    nested = [
        s
        for s in _all_states(DEFINITIONS["rotation"]).values()
        if s.get("Resource", "").startswith("arn:aws:states")
    ]
    assert len(nested) == 2
    assert all(
        s["Resource"].endswith("startExecution.sync:2") and s["Parameters"]["StateMachineArn"] == SM
        for s in nested
    )
