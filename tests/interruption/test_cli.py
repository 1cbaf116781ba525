"""`longshore event`: the dry run over AWS-shaped samples, JSON output, JSON lines, ownership and errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable
from longshore.cli.main import main
from tests.conftest import VALID_V1_MANIFESTS
from tests.interruption.fakes import EVENTS, claim, event_for, instance_id


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["event", *args])


def run_json(*args: str) -> tuple[int, list[dict[str, Any]]]:
    result = run("--json", *args)
    return result.exit_code, json.loads(result.stdout)


EXPECTED = {
    "spot-interruption-warning.json": ("spot-interruption", "interrupt"),
    "rebalance-recommendation.json": ("rebalance-recommendation", "per-pool"),
    "state-change-pending.json": ("state-change", "ignore"),
    "state-change-running.json": ("state-change", "ignore"),
    "state-change-stopping.json": ("state-change", "drain"),
    "state-change-shutting-down.json": ("state-change", "drain"),
    "state-change-stopped.json": ("state-change", "clean-up"),
    "state-change-terminated.json": ("state-change", "clean-up"),
    "health-scheduled-change-ec2.json": ("scheduled-change", "drain"),
    "health-issue-ec2.json": ("unknown", "ignore"),
    "health-scheduled-change-rds.json": ("unknown", "ignore"),
    "capacity-reservation-interruption-warning.json": ("capacity-reservation-interruption", "drain"),
    "unknown-ami-state-change.json": ("unknown", "ignore"),
}


def test_dry_run_json_over_every_valid_sample() -> None:
    code, rows = run_json(*(str(EVENTS / name) for name in EXPECTED))
    assert code == 0
    assert {Path(r["file"]).name: (r["kind"], r["action"]) for r in rows} == EXPECTED
    assert all(
        set(r) >= {"file", "kind", "instances", "action", "error"} and r["error"] is None for r in rows
    )
    health = next(r for r in rows if r["file"].endswith("health-scheduled-change-ec2.json"))
    assert health["instances"] == ["i-0b662ef9931388ba0", "i-05f3ab9c6e0d47a11"]
    assert all(r["owned"] is None and r["decisions"] is None for r in rows)


def test_malformed_files_report_the_error_and_fail_the_exit_status() -> None:
    code, rows = run_json(
        str(EVENTS / "malformed-missing-instance-id.json"), str(EVENTS / "spot-interruption-warning.json")
    )
    assert code == 1
    bad, good = rows
    assert (bad["kind"], bad["instances"], bad["action"]) == (None, [], None)
    assert "detail.instance-id: Field required" in bad["error"]
    assert good["error"] is None


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.json"))
    assert result.exit_code == 1
    assert f"{tmp_path / 'nope.json'}: error: cannot read" in result.stdout


def test_json_lines_and_arrays_are_one_event_per_entry(tmp_path: Path) -> None:
    lines = tmp_path / "events.jsonl"
    spot = json.dumps(event_for("spot-interruption-warning.json", instance_id(1)))
    lines.write_text(
        f"{spot}\n\n{{broken\n" + json.dumps(event_for("state-change-running.json", instance_id(2))) + "\n"
    )
    array = tmp_path / "events.json"
    array.write_text(json.dumps([event_for("rebalance-recommendation.json", instance_id(3))]))
    code, rows = run_json(str(lines), str(array))
    assert code == 1
    assert [(r["file"], r["kind"]) for r in rows] == [
        (f"{lines}:1", "spot-interruption"),
        (f"{lines}:3", None),
        (f"{lines}:4", "state-change"),
        (f"{array}[0]", "rebalance-recommendation"),
    ]
    assert "not JSON" in rows[1]["error"]


def test_human_output_names_kind_instances_action_and_deadline() -> None:
    result = run(str(EVENTS / "spot-interruption-warning.json"))
    assert result.exit_code == 0
    assert "spot-interruption (EC2 Spot Instance Interruption Warning)" in result.stdout
    assert "instances: i-0b662ef9931388ba0" in result.stdout
    assert "action: interrupt: mark (type, zone, spot) unavailable for 3 min" in result.stdout
    assert "deadline: 2024-03-18T15:40:08+00:00" in result.stdout


@pytest.fixture
def cluster_config(tmp_path: Path) -> Path:
    config = tmp_path / "cluster.yaml"
    shutil.copytree(VALID_V1_MANIFESTS, tmp_path / "manifests")  # an include reads only under its directory
    config.write_text(
        "apiVersion: longshore.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo-cluster\n"
        "spec:\n  interruption:\n    rebalance: notify\n    rebalanceByPool:\n      general: replace\n"
        "  include:\n    - manifests/*.yaml\n"
    )
    return config


def claims_file(tmp_path: Path) -> Path:
    path = tmp_path / "claims.json"
    path.write_text(
        json.dumps(
            [vars_of(claim(1, nodepool="general")), vars_of(claim(2, nodepool="general", state="deleting"))]
        )
    )
    return path


def vars_of(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__slots__}


def test_with_a_cluster_it_says_which_instances_are_owned_and_what_happens_to_each(
    tmp_path: Path, cluster_config: Path
) -> None:
    health = tmp_path / "health.json"
    health.write_text(
        json.dumps(event_for("health-scheduled-change-ec2.json", instance_id(1), "i-0fffffffffffffff9"))
    )
    rebalance = tmp_path / "rebalance.json"
    rebalance.write_text(json.dumps(event_for("rebalance-recommendation.json", instance_id(1))))
    terminated = tmp_path / "terminated.json"
    terminated.write_text(json.dumps(event_for("state-change-terminated.json", instance_id(2))))
    code, rows = run_json(
        "--cluster",
        str(cluster_config),
        "--claims",
        str(claims_file(tmp_path)),
        str(health),
        str(rebalance),
        str(terminated),
    )
    assert code == 0, rows
    assert [(r["owned"], r["decisions"]) for r in rows] == [
        ([instance_id(1)], {instance_id(1): "drain", "i-0fffffffffffffff9": "foreign"}),
        ([instance_id(1)], {instance_id(1): "replace"}),  # the pool `general` replaces on rebalance
        ([instance_id(2)], {instance_id(2): "defer"}),  # its claim is already being disrupted
    ]
    text = run("--cluster", str(cluster_config), "--claims", str(claims_file(tmp_path)), str(health)).stdout
    assert f"owned by this cluster: {instance_id(1)}" in text
    assert "i-0fffffffffffffff9: foreign (no node claim in this cluster)" in text


def test_ownership_from_the_dynamodb_claim_table(tmp_path: Path, cluster_config: Path) -> None:
    event = tmp_path / "spot.json"
    event.write_text(json.dumps(event_for("spot-interruption-warning.json", instance_id(7))))
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="longshore",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "instance_id")
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-instance",
                    "KeySchema": [{"AttributeName": "instance_id", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        DynamoClaimStore(DynamoTable(client, "longshore")).put(claim(7, nodepool="general"))
        code, rows = run_json("--cluster", str(cluster_config), "--table", "longshore", str(event))
    assert code == 0
    assert rows[0]["decisions"] == {instance_id(7): "interrupt"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--claims", "CLAIMS"], "--claims and --table need --cluster CONFIG"),
        (["--cluster", "CONFIG"], "--cluster needs exactly one of --claims FILE or --table NAME"),
    ],
)
def test_option_mistakes_are_usage_errors(
    tmp_path: Path, cluster_config: Path, args: list[str], message: str
) -> None:
    resolved = [{"CLAIMS": str(claims_file(tmp_path)), "CONFIG": str(cluster_config)}.get(a, a) for a in args]
    result = run(*resolved, str(EVENTS / "spot-interruption-warning.json"))
    assert result.exit_code == 2
    assert message in result.output


def test_a_bad_claims_file_names_the_claim_and_field(tmp_path: Path, cluster_config: Path) -> None:
    bad = tmp_path / "claims.json"
    bad.write_text(json.dumps([{"id": "a", "nodepool": "general"}, {"id": "b", "nodepool": 7}]))
    result = run(
        "--cluster", str(cluster_config), "--claims", str(bad), str(EVENTS / "spot-interruption-warning.json")
    )
    assert result.exit_code == 2
    assert f"{bad}: claim [1]: nodepool: Input should be a valid string (value 7)" in result.output


def test_a_bad_cluster_config_is_reported(tmp_path: Path) -> None:
    config = tmp_path / "cluster.yaml"
    config.write_text(
        "apiVersion: longshore.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo\nspec:\n  region: mars\n"
    )
    result = run(
        "--cluster",
        str(config),
        "--claims",
        str(claims_file(tmp_path)),
        str(EVENTS / "spot-interruption-warning.json"),
    )
    assert result.exit_code == 2
    assert "mars" in result.output
