"""`longshore catalog --live` reads the capacity reservations the node classes select from AWS through the
provisioner's reader (`Ec2CapacityReservations.on_subnets`, `cli.reservations.live_reservations`): moto for EC2,
with `longshore_sim.reservations` answering DescribeCapacityReservations, which moto lacks. Without `--live`
nothing is asked of AWS; `--reservations FILE` is used instead of AWS; a failed read is named on stderr and
leaves that class without reservations, as the provisioner does."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from longshore.cli.main import main
from longshore_sim.aws import seed_cluster
from longshore_sim.reservations import ReservationStore
from tests.reservations.test_cli_reservations import CLUSTER, reservation, write

pytestmark = pytest.mark.slow  # the live catalog reads every instance type from moto (a few seconds a run)


@pytest.fixture
def account() -> Iterator[ReservationStore]:
    """moto's EC2 with the cluster's subnets (tag karpenter.sh/discovery=demo in us-east-1a..c) and reservations
    answered on every client of the default session, which the command's `boto3.client` uses."""
    with mock_aws():
        boto3.setup_default_session(region_name="us-east-1")
        session = boto3.DEFAULT_SESSION
        seed_cluster(session, "demo")
        yield ReservationStore(time.time).attach(session)
    boto3.DEFAULT_SESSION = None


def catalog(*extra: str) -> Result:
    return CliRunner().invoke(main, ["catalog", "-c", str(CLUSTER), "--json", *extra])


def reserved(result: Result) -> list[tuple[str, dict[str, Any]]]:
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = [row for rows in report["nodepools"].values() for row in rows]
    return [(row["name"], o) for row in rows for o in row["offerings"] if o.get("reservation_id")]


def test_live_lists_the_reservations_the_node_class_selects_as_the_provisioner_reads_them(
    account: ReservationStore,
) -> None:
    account.add("m5.2xlarge", "us-east-1a", 2, tags={"team": "ml"}, id="cr-live")
    account.add("m5.2xlarge", "us-east-1a", 5, tags={"team": "web"}, id="cr-other")  # not selected
    account.add("m5.2xlarge", "us-east-1a", 5, tags={"team": "ml"}, id="cr-ended", state="expired")
    result = catalog("--live")
    [(name, offering)] = reserved(result)
    assert name == "m5.2xlarge"
    assert (offering["reservation_id"], offering["zone"], offering["remaining"]) == (
        "cr-live",
        "us-east-1a",
        2,
    )
    assert json.loads(result.stdout)["aws"] == "live"


def test_without_live_nothing_is_asked_of_aws_and_a_file_replaces_aws(
    account: ReservationStore, tmp_path: Path
) -> None:
    account.add("m5.2xlarge", "us-east-1a", 2, tags={"team": "ml"}, id="cr-live")
    assert reserved(catalog()) == []  # offline: the shipped data, no reservation read
    path = write(tmp_path, [reservation("cr-file", 1, "us-east-1b")])
    [(_, offering)] = reserved(catalog("--live", "--reservations", str(path)))
    assert offering["reservation_id"] == "cr-file"


def test_a_failed_read_is_named_and_leaves_the_class_without_reservations(account: ReservationStore) -> None:
    account.add("m5.2xlarge", "us-east-1a", 2, tags={"team": "ml"}, id="cr-live")
    account.failing = "UnauthorizedOperation"
    result = catalog("--live")
    assert reserved(result) == []
    assert "EC2NodeClass default: capacity reservations not read: capacityReservationSelectorTerms[0]" in (
        result.stderr
    )
    assert "UnauthorizedOperation" in result.stderr
