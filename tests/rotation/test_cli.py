"""`longshore rotate` against the Kubernetes API emulator and Step Functions on moto: selection, refusal of
nodes the cluster does not own, the documented input JSON, and idempotent starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from longshore.cli.rotate import command
from longshore.core.commands import RotationRequest
from longshore.workflow.definition import disruption_definition, rotation_definition
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.planner.fakes import node_manifest
from tests.planner.test_explain import CONFIG, claim_for
from tests.workflow.fakes import START
from tests.workflow.sfn_harness import ROLE_ARN, STEPS_ARN

DAY = 86400.0


@pytest.fixture
def emulator() -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator(clock=VirtualClock(START)) as running:
        yield running


@pytest.fixture
def files(tmp_path: Path, emulator: KubeApiEmulator) -> dict[str, Path]:
    """n1 (40 days old, AMI ami-old), n2 (2 days, ami-new), n3 (10 days, ami-old, label team=a), stranger."""
    (tmp_path / "cluster.yaml").write_text(CONFIG)
    ages = {"n1": 40, "n2": 2, "n3": 10}
    amis = {"n1": "ami-old", "n2": "ami-new", "n3": "ami-old"}
    claims = []
    for name in (*ages, "stranger"):
        manifest = node_manifest(name, f"i-{name}", type_name="m5.large")
        if name == "n3":
            manifest["metadata"]["labels"]["team"] = "a"
        emulator.store.create("nodes", manifest, keep_status=True)
        if name in ages:
            launched = START - ages[name] * DAY
            claim = replace(
                claim_for(name, "m5.large"), launched_at=launched, created_at=launched, image_id=amis[name]
            )
            claims.append(asdict(claim))
    (tmp_path / "claims.json").write_text(json.dumps(claims))
    return {"config": tmp_path / "cluster.yaml", "claims": tmp_path / "claims.json"}


def rotate(emulator: KubeApiEmulator, files: dict[str, Path], *extra: str) -> Result:
    args = [
        "--cluster",
        str(files["config"]),
        "--cluster-name",
        "demo-cluster",
        "--server",
        emulator.url,
        "--claims",
        str(files["claims"]),
        "--now",
        str(START),
        *extra,
    ]
    return CliRunner().invoke(command, args, catch_exceptions=False)


def input_of(result: Result) -> dict[str, Any]:
    line = next(line for line in result.output.splitlines() if line.startswith("input: "))
    return dict(json.loads(line.removeprefix("input: ")))


def test_dry_run_prints_the_plan_and_the_documented_input(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    result = rotate(emulator, files, "--node", "n2", "--node", "n1", "--max-unavailable", "2", "--dry-run")

    assert result.exit_code == 0, result.output
    payload = input_of(result)
    assert payload == {
        "nodes": ["n2", "n1"],
        "maxUnavailable": 2,
        "surge": True,
        "canary": True,
        "reason": "rotation",
        "drainSeconds": None,
        "requestedAt": START,
    }
    assert RotationRequest.from_input(payload).to_input() == payload
    assert "canary n2" in result.output and "dry run: nothing started" in result.output


def test_nodes_the_cluster_does_not_own_are_refused_by_name(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    result = rotate(emulator, files, "--node", "n1", "--node", "stranger", "--node", "ghost", "--dry-run")

    assert result.exit_code == 1
    assert "refusing to rotate: cluster demo-cluster does not own these nodes" in result.output
    assert "stranger: no NodeClaim for instance i-stranger" in result.output
    assert "ghost: no such node" in result.output
    assert "input:" not in result.output


def test_older_than_and_selector_combine(emulator: KubeApiEmulator, files: dict[str, Path]) -> None:
    old = rotate(
        emulator, files, "--older-than", "7d", "--selector", "karpenter.sh/nodepool=default", "--dry-run"
    )
    assert input_of(old)["nodes"] == ["n1", "n3"]
    team = rotate(emulator, files, "--older-than", "7d", "--selector", "team=a", "--dry-run")
    assert input_of(team)["nodes"] == ["n3"]
    none = rotate(emulator, files, "--older-than", "90d", "--dry-run")
    assert none.exit_code == 0 and "nothing to rotate" in none.output


def test_drifted_selects_nodes_on_an_ami_that_is_no_longer_current(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    result = rotate(emulator, files, "--drifted", "--ami", "ami-new", "--dry-run")

    assert input_of(result)["nodes"] == ["n1", "n3"]
    assert "drifted: AMI ami-old is no longer the resolved AMI (ami-new)" in result.output


def test_a_rotation_is_started_once_with_the_documented_input(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    with mock_aws():
        client = boto3.client("stepfunctions", region_name="us-east-1")
        disruption = client.create_state_machine(
            name="longshore-disruption",
            definition=json.dumps(disruption_definition(STEPS_ARN)),
            roleArn=ROLE_ARN,
        )["stateMachineArn"]
        client.create_state_machine(
            name="longshore-rotation",
            definition=json.dumps(rotation_definition(STEPS_ARN, disruption)),
            roleArn=ROLE_ARN,
        )

        first = rotate(
            emulator, files, "--node", "n1", "--node", "n3", "--no-surge", "--drain-seconds", "600"
        )
        again = rotate(
            emulator, files, "--node", "n1", "--node", "n3", "--no-surge", "--drain-seconds", "600"
        )

        rotation = next(
            m["stateMachineArn"]
            for m in client.list_state_machines()["stateMachines"]
            if m["name"] == "longshore-rotation"
        )
        (execution,) = client.list_executions(stateMachineArn=rotation)["executions"]
        started = json.loads(client.describe_execution(executionArn=execution["executionArn"])["input"])

    assert first.exit_code == 0 and "started arn:aws:states:" in first.output
    assert again.exit_code == 0 and "already started" in again.output
    assert started == input_of(first)
    assert started["surge"] is False and started["drainSeconds"] == 600
    assert execution["name"] == RotationRequest.from_input(started).execution_name()


def test_a_selection_is_required(emulator: KubeApiEmulator, files: dict[str, Path]) -> None:
    result = rotate(emulator, files)
    assert result.exit_code == 2 and "--node, --selector, --drifted or --older-than" in result.output
    bad = rotate(emulator, files, "--older-than", "a month")
    assert bad.exit_code == 2 and "'a month' is not a duration" in bad.output
