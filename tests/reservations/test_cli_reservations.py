"""`--reservations FILE` of the `catalog` and `plan` commands, offline: a DescribeCapacityReservations answer
selected by the node class's `capacityReservationSelectorTerms` with the provisioner's own adapter
(`adapters.aws.reservations_file`, `cli.reservations`); reserved offerings listed with price, room, id and
type; plans reserved before spot before on-demand within each reservation's room; every bad file reported
with file, entry, field and value, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from longshore.adapters.aws.reservations import Ec2CapacityReservations
from longshore.adapters.aws.reservations_file import FileReservationsEc2, load_reservation_file
from longshore.cli.main import main
from longshore.core.model import SelectorTerm
from tests import builders as b
from tests.conftest import REPO, SEED_WORKLOADS

CLUSTER = REPO / "sim" / "longshore_sim" / "scenarios" / "clusters" / "reserved.yaml"  # selects tag team=ml
INFLATE = SEED_WORKLOADS / "inflate.yaml"  # 1 vCPU per pod: 7 on an m5.2xlarge
ML = [{"Key": "team", "Value": "ml"}]


def reservation(rid: str, count: int, zone: str = "us-east-1a", **fields: Any) -> dict[str, Any]:
    return {
        "CapacityReservationId": rid,
        "InstanceType": "m5.2xlarge",
        "AvailabilityZone": zone,
        "AvailableInstanceCount": count,
        "TotalInstanceCount": count,
        "State": "active",
        "InstanceMatchCriteria": "targeted",
        "OwnerId": "123456789012",
        "Tags": ML,
        **fields,
    }


ACCOUNT = [
    reservation("cr-odcr", 2),
    reservation(
        "cr-block",
        1,
        "us-east-1b",
        ReservationType="capacity-block",
        EndDate="2099-01-01T00:00:00+00:00",
        Interruptible=True,
    ),
    reservation("cr-other", 5, Tags=[{"Key": "team", "Value": "web"}]),  # not selected
    reservation("cr-ended", 5, State="expired"),  # not active
]


def write(tmp_path: Path, document: Any, name: str = "reservations.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def plan(reservations: Path, replicas: int = 30, *extra: str) -> Result:
    return run(
        "plan",
        "-c",
        str(CLUSTER),
        "--pods",
        str(INFLATE),
        "--replicas",
        f"inflate={replicas}",
        "--reservations",
        str(reservations),
        *extra,
    )


def test_the_file_answers_karpenters_queries_as_ec2_does() -> None:
    ec2 = FileReservationsEc2([{**r, "Tags": r["Tags"]} for r in ACCOUNT])
    reader = Ec2CapacityReservations(ec2, lambda _c: frozenset({"us-east-1a", "us-east-1b"}))
    tagged = b.node_class(capacity_reservation_selector_terms=(SelectorTerm(tags=(("team", "ml"),)),))
    assert [r.id for r in reader.list(tagged, 0.0)] == ["cr-block", "cr-odcr"]
    by_id = b.node_class(capacity_reservation_selector_terms=(SelectorTerm(id="cr-other"),))
    assert [r.id for r in reader.list(by_id, 0.0)] == ["cr-other"]
    any_team = b.node_class(
        capacity_reservation_selector_terms=(
            SelectorTerm(tags=(("team", "*"),), owner="123456789012", instance_match_criteria="targeted"),
        )
    )
    assert [r.id for r in reader.list(any_team, 0.0)] == ["cr-block", "cr-odcr", "cr-other"]
    other_owner = b.node_class(
        capacity_reservation_selector_terms=(SelectorTerm(tags=(("team", "ml"),), owner="999999999999"),)
    )
    assert reader.list(other_owner, 0.0) == ()


def test_plan_fills_the_reservations_first_within_their_room_then_spot(tmp_path: Path) -> None:
    result = plan(write(tmp_path, {"CapacityReservations": ACCOUNT}), 30, "--json")
    assert result.exit_code == 0, result.output
    claims = json.loads(result.stdout)["nodeclaims"]
    reserved = [c for c in claims if c["capacity_type"] == "reserved"]
    assert sorted(c["reservation_id"] for c in reserved) == ["cr-block", "cr-odcr", "cr-odcr"]  # room: 2 + 1
    assert all(c["instance_type"] == "m5.2xlarge" and c["price_per_hour"] < 1e-6 for c in reserved)
    assert {c["capacity_type"] for c in claims} - {"reserved"} == {"spot"}  # spot before on-demand
    first = reserved[0]["offerings"][0]
    assert (first["capacity_type"], first["reservation_id"]) == ("reserved", reserved[0]["reservation_id"])
    assert sum(len(c["pods"]) for c in claims) == 30
    table = plan(write(tmp_path, ACCOUNT, "list.json"), 30)  # the bare list works too
    assert table.exit_code == 0, table.output
    assert "reservation" in table.stdout.splitlines()[0]
    assert sum("cr-odcr" in line for line in table.stdout.splitlines()) == 2


def test_without_the_option_or_without_terms_nothing_is_reserved(tmp_path: Path) -> None:
    plain = run("plan", "-c", str(CLUSTER), "--pods", str(INFLATE), "--replicas", "inflate=8", "--json")
    assert plain.exit_code == 0, plain.output
    assert all(c["capacity_type"] != "reserved" for c in json.loads(plain.stdout)["nodeclaims"])
    no_terms = tmp_path / "cluster.yaml"
    no_terms.write_text(CLUSTER.read_text().split("  capacityReservationSelectorTerms:")[0])
    result = run(
        "plan",
        "-c",
        str(no_terms),
        "--pods",
        str(INFLATE),
        "--replicas",
        "inflate=8",
        "--reservations",
        str(write(tmp_path, ACCOUNT)),
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert all(c["capacity_type"] != "reserved" for c in json.loads(result.stdout)["nodeclaims"])
    assert "no EC2NodeClass has capacityReservationSelectorTerms" in result.stderr


def test_catalog_lists_each_selected_reservation_with_price_room_id_and_type(tmp_path: Path) -> None:
    path = write(tmp_path, {"CapacityReservations": [*ACCOUNT, reservation("cr-full", 0)]})
    result = run("catalog", "-c", str(CLUSTER), "--reservations", str(path), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["nodepools"]["general"]
    assert rows[0]["name"] == "m5.2xlarge"  # the reserved type is the cheapest
    reserved = {o["reservation_id"]: o for o in rows[0]["offerings"] if o["capacity_type"] == "reserved"}
    assert set(reserved) == {"cr-odcr", "cr-block", "cr-full"}
    odcr, block, full = reserved["cr-odcr"], reserved["cr-block"], reserved["cr-full"]
    on_demand = next(o["price"] for o in rows[0]["offerings"] if o["capacity_type"] == "on-demand")
    assert odcr["price"] == pytest.approx(on_demand / 10_000_000)
    assert (odcr["zone"], odcr["reservation_type"], odcr["remaining"], odcr["interruptible"]) == (
        "us-east-1a",
        "default",
        2,
        False,
    )
    assert (block["zone"], block["reservation_type"], block["remaining"], block["interruptible"]) == (
        "us-east-1b",
        "capacity-block",
        1,
        True,
    )
    assert (full["remaining"], full["available"]) == (0, False)
    assert all("reservation_id" not in o for o in rows[1]["offerings"])
    table = run("catalog", "-c", str(CLUSTER), "--reservations", str(path), "--limit", "3")
    assert table.exit_code == 0, table.output
    assert "pool general: 3 capacity reservation(s)" in table.stdout
    line = next(line for line in table.stdout.splitlines() if "cr-block" in line)
    assert "capacity-block (interruptible)" in line and "us-east-1b" in line


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not: [valid", "reservations.json:"),
        ("", "reservations.json: the file is empty"),
        ('"just text"', "expected a DescribeCapacityReservations answer"),
        (json.dumps([42]), "CapacityReservations[0]: expected a mapping of fields, got int 42"),
        (
            json.dumps([{**reservation("cr-1", 1), "AvailableInstanceCount": -1}]),
            "CapacityReservations[0].AvailableInstanceCount: an integer >= 0 is required, got int -1",
        ),
        (
            json.dumps([{k: v for k, v in reservation("cr-1", 1).items() if k != "InstanceType"}]),
            "CapacityReservations[0].InstanceType: a non-empty string is required, got nothing",
        ),
        (
            json.dumps([reservation("cr-1", 1, InstanceMatchCriteria="any")]),
            "CapacityReservations[0].InstanceMatchCriteria: expected one of open, targeted, got str 'any'",
        ),
        (
            json.dumps([reservation("cr-1", 1, ReservationType="spot-block")]),
            "CapacityReservations[0].ReservationType: expected one of default, capacity-block",
        ),
        (
            json.dumps([reservation("cr-1", 1, State="activ")]),
            "CapacityReservations[0].State: expected one of active,",
        ),
        (
            json.dumps([reservation("cr-1", 1, EndDate="next tuesday")]),
            "CapacityReservations[0].EndDate: an ISO 8601 date and time is required, got str 'next tuesday'",
        ),
        (
            json.dumps([reservation("cr-1", 1, Tags={"team": "ml"})]),
            'CapacityReservations[0].Tags: a list of {"Key": string, "Value": string} is required',
        ),
        (
            json.dumps([reservation("cr-1", 1, Interruptible="yes")]),
            "CapacityReservations[0].Interruptible: true or false is required, got str 'yes'",
        ),
        (
            json.dumps([reservation("cr-1", 1), reservation("cr-1", 2)]),
            "CapacityReservations[1].CapacityReservationId: 'cr-1' is also CapacityReservations[0]",
        ),
    ],
)
def test_a_bad_file_is_reported_with_file_field_and_value(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = write(tmp_path, content)
    for result in (plan(path, 2), run("catalog", "-c", str(CLUSTER), "--reservations", str(path))):
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output
        assert expected in result.stderr
        assert str(path) in result.stderr


def test_every_problem_is_reported_at_once_and_a_missing_file_is_named(tmp_path: Path) -> None:
    path = write(
        tmp_path, json.dumps([reservation("", 1), reservation("cr-2", 1, AvailableInstanceCount=True)])
    )
    result = plan(path, 2)
    assert result.exit_code == 2
    assert "2 error(s)" in result.stderr
    assert "CapacityReservations[0].CapacityReservationId" in result.stderr
    assert "CapacityReservations[1].AvailableInstanceCount: an integer >= 0 is required, got bool True" in (
        result.stderr
    )
    missing = plan(tmp_path / "absent.json", 2)
    assert missing.exit_code == 2
    assert f"{tmp_path / 'absent.json'}: cannot read the file" in missing.stderr


def test_yaml_with_defaults_and_an_unzoned_end_date(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """CapacityReservations:
  - CapacityReservationId: cr-y
    InstanceType: m5.2xlarge
    AvailabilityZone: us-east-1a
    AvailableInstanceCount: 1
    EndDate: 2099-01-01T00:00:00
    Tags: [{Key: team, Value: ml}]
""",
        "reservations.yaml",
    )
    (entry,) = load_reservation_file(path)
    assert (entry["State"], entry["InstanceMatchCriteria"], entry["ReservationType"]) == (
        "active",
        "open",
        "default",
    )
    assert entry["EndDate"].utcoffset().total_seconds() == 0
    result = plan(path, 3, "--json")
    assert result.exit_code == 0, result.output
    assert [c["reservation_id"] for c in json.loads(result.stdout)["nodeclaims"]] == ["cr-y"]
