"""`longshore plan --placement-groups FILE`, offline: a DescribePlacementGroups answer resolved for each node
class's `placementGroupSelector` by the provisioner's own `Ec2PlacementGroups` (`adapters.aws.placement_groups_file`,
`cli.placement_groups`), so a partition group's partitions are offered as in the provisioner's plan; the file
answers the adapter's query as EC2 does (moto, with `longshore_sim.placement_groups` standing in for the
placement-group calls moto lacks); every bad file reported with file, entry, field and value, never a
traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from longshore.adapters.aws.network import Ec2PlacementGroups, select_placement_group
from longshore.adapters.aws.placement_groups_file import FilePlacementGroupsEc2, load_placement_group_file
from longshore.cli.main import main
from longshore.core import labels as wk
from longshore.core.model import SelectorTerm
from longshore_sim.placement_groups import PlacementGroups
from tests import builders as b
from tests.conftest import REPO

SCENARIOS = REPO / "sim" / "longshore_sim" / "scenarios"
CLUSTER = SCENARIOS / "clusters" / "hdfs.yaml"  # the hdfs node class selects the placement group `hdfs`
HDFS = SCENARIOS / "workloads" / "hdfs.yaml"  # datanodes spread over the partitions (maxSkew 1)
SAMPLE = REPO / "tests" / "fixtures" / "aws" / "placement-groups.json"  # hdfs: 3 partitions; hpc: cluster


def group(name: str = "hdfs", **fields: Any) -> dict[str, Any]:
    return {
        "GroupName": name,
        "GroupId": f"pg-{name}",
        "Strategy": "partition",
        "PartitionCount": 3,
        "State": "available",
        **fields,
    }


def write(tmp_path: Path, document: Any, name: str = "groups.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def plan(*extra: str, datanodes: int = 6) -> Result:
    args = ["plan", "-c", str(CLUSTER), "--pods", str(HDFS), "--replicas", f"datanode={datanodes}", *extra]
    return CliRunner().invoke(main, args)


def test_the_partitions_of_the_selected_group_are_offered_and_the_spread_fills_them() -> None:
    result = plan("--placement-groups", str(SAMPLE), "--json")
    assert result.exit_code == 0, result.output
    claims = json.loads(result.stdout)["nodeclaims"]
    partitions = sorted(c["labels"][wk.PLACEMENT_GROUP_PARTITION] for c in claims)
    assert partitions == ["1", "2", "3"]
    assert {c["labels"][wk.PLACEMENT_GROUP_ID] for c in claims} == {"pg-0123456789abcdef0"}
    assert all(len(c["pods"]) == 2 for c in claims)


def test_without_the_file_the_key_is_open_and_the_spread_finds_no_partition() -> None:
    result = plan()
    assert result.exit_code == 0, result.output
    assert "no new nodes" in result.stdout
    assert f"no eligible {wk.PLACEMENT_GROUP_PARTITION} value" in result.stdout


def test_a_selector_the_file_does_not_answer_is_named_and_its_pools_planned_with_the_key_open(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, [group("other"), group("hdfs", State="deleting")], "groups.yaml")
    result = plan("--placement-groups", str(path), datanodes=2)
    assert result.exit_code == 0, result.output
    assert (
        f"{path}: EC2NodeClass hdfs: spec.placementGroupSelector name hdfs matches no available placement group; "
        "its pools are planned with the partition key open"
    ) in result.stderr
    assert "no new nodes" in result.stdout


def test_the_file_answers_the_adapters_query_as_ec2_does() -> None:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        account = PlacementGroups().attach(ec2)
        hdfs, hpc = account.create("hdfs", "partition", 3), account.create("hpc", "cluster")
        file = FilePlacementGroupsEc2(ec2.describe_placement_groups()["PlacementGroups"])
        for term in (
            SelectorTerm(name="hdfs"),
            SelectorTerm(id=hpc.group_id),
            SelectorTerm(id=hdfs.group_id),
        ):
            assert select_placement_group(file, term, "c") == select_placement_group(ec2, term, "c")
        for client in (ec2, file):  # an unknown name: EC2's error, the file's empty answer; both mean none
            assert (
                Ec2PlacementGroups(client).group(b.node_class(placement_group=SelectorTerm(name="no")))
                is None
            )
    deleting = FilePlacementGroupsEc2([group("old", State="deleting")])
    assert Ec2PlacementGroups(deleting).group(b.node_class(placement_group=SelectorTerm(name="old"))) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not: [valid", "not JSON or YAML"),
        ("", "the file is empty"),
        (json.dumps({"PlacementGroups": {"GroupName": "x"}}), "expected a DescribePlacementGroups answer"),
        (json.dumps(["hdfs"]), "PlacementGroups[0]: expected a mapping of fields, got str 'hdfs'"),
        (
            json.dumps([group(GroupName="")]),
            "PlacementGroups[0].GroupName: a non-empty string is required, got str ''",
        ),
        (
            json.dumps([group(GroupId=None)]),
            "PlacementGroups[0].GroupId: a non-empty string is required, got nothing",
        ),
        (
            json.dumps([group(Strategy="rack")]),
            "PlacementGroups[0].Strategy: expected one of cluster, partition, spread, got str 'rack'",
        ),
        (
            json.dumps([group(PartitionCount=8)]),
            "PlacementGroups[0].PartitionCount: an integer 1..7 is required with the partition strategy, got int 8",
        ),
        (
            json.dumps([group(PartitionCount="3")]),
            "PlacementGroups[0].PartitionCount: an integer 1..7 is required with the partition strategy, got str '3'",
        ),
        (
            json.dumps([group(Strategy="spread", PartitionCount=2)]),
            "PlacementGroups[0].PartitionCount: only a partition group has partitions (spread), got int 2",
        ),
        (
            json.dumps([group(State="gone")]),
            "PlacementGroups[0].State: expected one of pending, available, deleting, deleted, got str 'gone'",
        ),
        (
            json.dumps([group("a"), group("a", GroupId="pg-b")]),
            "PlacementGroups[1].GroupName: 'a' is also PlacementGroups[0]",
        ),
    ],
)
def test_a_bad_file_is_reported_with_file_field_and_value(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = write(tmp_path, content)
    result = plan("--placement-groups", str(path), datanodes=1)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert expected in result.stderr
    assert str(path) in result.stderr


def test_every_problem_is_reported_at_once_and_a_missing_file_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, [group(GroupName=""), group("b", Strategy="rack")])
    result = plan("--placement-groups", str(path), datanodes=1)
    assert result.exit_code == 2
    assert "2 error(s) in the placement groups file" in result.stderr
    assert "PlacementGroups[0].GroupName" in result.stderr and "PlacementGroups[1].Strategy" in result.stderr
    missing = plan("--placement-groups", str(tmp_path / "absent.json"), datanodes=1)
    assert missing.exit_code == 2
    assert f"{tmp_path / 'absent.json'}: cannot read the file" in missing.stderr


def test_yaml_bare_list_with_the_state_defaulted(tmp_path: Path) -> None:
    path = write(
        tmp_path, "- {GroupName: hdfs, GroupId: pg-1, Strategy: partition, PartitionCount: 2}\n", "g.yaml"
    )
    (entry,) = load_placement_group_file(path)
    assert entry["State"] == "available"
    result = plan("--placement-groups", str(path), "--json", datanodes=4)
    assert result.exit_code == 0, result.output
    claims = json.loads(result.stdout)["nodeclaims"]
    assert sorted(c["labels"][wk.PLACEMENT_GROUP_PARTITION] for c in claims) == ["1", "2"]
