"""The store ports, DynamoDB (moto) and in-memory side by side: both must give the same answers.

Matrix: create-if-absent (first wins), get/by_instance/list/put/delete, compare-and-put (fresh wins, stale
loses, vanished loses), delete-if (unchanged only), the round trip of every claim field, unavailable offerings
with TTL, lease acquire (free, held, expired, renew by owner) and release (owner only), and many threads
racing for one claim.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws.dynamodb import (
    DynamoClaimStore,
    DynamoLease,
    DynamoOfferingAvailability,
    DynamoTable,
)
from longshore.adapters.memory import MemoryClaimStore, MemoryLease, MemoryOfferingAvailability
from longshore.core.claims import NodeClaim
from longshore.core.model import Requirement
from longshore_sim.aws import create_table
from tests.adapters.conftest import BOTOCORE_SESSION


@pytest.fixture(params=["dynamodb", "memory"])
def stores(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any, Any]]:
    if request.param == "memory":
        yield MemoryClaimStore(), MemoryOfferingAvailability(), MemoryLease()
        return
    with mock_aws():
        session = boto3.session.Session(botocore_session=BOTOCORE_SESSION, region_name="us-east-1")
        client = session.client("dynamodb")
        create_table(client, "longshore")
        table = DynamoTable(client, "longshore")
        yield DynamoClaimStore(table), DynamoOfferingAvailability(table), DynamoLease(table)


FULL = NodeClaim(
    id="default-0123456789",
    nodepool="default",
    node_class="default",
    requirements=(
        Requirement("karpenter.sh/capacity-type", "In", ("spot", "on-demand")),
        Requirement("x", "Gt", ("3",), 2),
    ),
    instance_types=("m5.large", "c5.large"),
    instance_type="m5.large",
    zone="us-east-1a",
    capacity_type="spot",
    price=0.0351,
    instance_id="i-0abc",
    node_name="ip-10-0-0-1.ec2.internal",
    provider_id="aws:///us-east-1a/i-0abc",
    state="registered",
    launched_at=10.5,
    registered_at=40.25,
    created_at=10.0,
    pods=("default/a", "default/b"),
    image_id="ami-1",
    launch_template="longshore/abc",
    attempts=2,
    reason="",
    version=3,
)


def test_claim_round_trips_every_field(stores: tuple[Any, Any, Any]) -> None:
    claims, _, _ = stores
    assert claims.create_if_absent(FULL)
    assert claims.get(FULL.id) == FULL
    assert claims.by_instance("i-0abc") == FULL
    assert claims.list() == (FULL,)


def test_create_if_absent_lets_only_the_first_writer_win(stores: tuple[Any, Any, Any]) -> None:
    claims, _, _ = stores
    first = NodeClaim("c1", "default", "default", state="launching", reason="first")
    assert claims.create_if_absent(first)
    assert not claims.create_if_absent(replace(first, reason="second"))
    assert claims.get("c1").reason == "first"


def test_compare_and_put_rejects_stale_and_vanished_claims(stores: tuple[Any, Any, Any]) -> None:
    claims, _, _ = stores
    claims.create_if_absent(NodeClaim("c1", "default", "default", state="launching"))
    read = claims.get("c1")
    written = claims.compare_and_put(replace(read, reason="mine"))
    assert written is not None and written.version == read.version + 1
    assert claims.compare_and_put(replace(read, reason="stale")) is None
    assert claims.get("c1").reason == "mine"
    claims.delete("c1")
    claims.delete("c1")  # idempotent
    assert claims.get("c1") is None
    assert claims.compare_and_put(written) is None


def test_delete_if_forgets_only_an_unchanged_claim(stores: tuple[Any, Any, Any]) -> None:
    claims, _, _ = stores
    claims.create_if_absent(NodeClaim("c1", "default", "default", state="launched"))
    read = claims.get("c1")
    registered = claims.compare_and_put(replace(read, state="registered"))  # another run moved it on
    assert registered is not None
    assert claims.delete_if("c1", read.version) is False
    assert claims.get("c1") == registered, "a claim changed since it was read survives"
    assert claims.delete_if("c1", registered.version) is True
    assert claims.get("c1") is None
    assert claims.delete_if("c1", registered.version) is False, "already gone: nothing deleted"


def test_by_instance_and_list_see_puts_and_deletes(stores: tuple[Any, Any, Any]) -> None:
    claims, _, _ = stores
    claims.put(NodeClaim("b", "p", "n", instance_id="i-2"))
    claims.put(NodeClaim("a", "p", "n"))
    assert [c.id for c in claims.list()] == ["a", "b"]
    assert claims.by_instance("i-2").id == "b"
    assert claims.by_instance("i-404") is None
    claims.put(NodeClaim("b", "p", "n"))  # instance id cleared
    assert claims.by_instance("i-2") is None


def test_unavailable_offerings_expire(stores: tuple[Any, Any, Any]) -> None:
    _, offerings, _ = stores
    offerings.mark_unavailable("m5.large", "us-east-1a", "spot", 280.0)
    offerings.mark_unavailable("c5.large", "us-east-1b", "on-demand", 200.0)
    assert offerings.unavailable(100.0) == {
        ("m5.large", "us-east-1a", "spot"),
        ("c5.large", "us-east-1b", "on-demand"),
    }
    assert offerings.unavailable(250.0) == {("m5.large", "us-east-1a", "spot")}
    assert offerings.unavailable(280.0) == frozenset()


def test_lease_is_exclusive_until_it_expires_or_is_released(stores: tuple[Any, Any, Any]) -> None:
    _, _, lease = stores
    assert lease.acquire("provisioner", "run-1", now=0.0, ttl_s=60.0)
    assert not lease.acquire("provisioner", "run-2", now=30.0, ttl_s=60.0)
    assert lease.acquire("provisioner", "run-1", now=30.0, ttl_s=60.0), "the owner renews"
    assert not lease.acquire("provisioner", "run-2", now=89.0, ttl_s=60.0)
    assert lease.acquire("provisioner", "run-2", now=90.0, ttl_s=60.0), "expired: anyone may take it"
    lease.release("provisioner", "run-1")  # not the owner: no effect
    assert not lease.acquire("provisioner", "run-3", now=100.0, ttl_s=60.0)
    lease.release("provisioner", "run-2")
    assert lease.acquire("provisioner", "run-3", now=100.0, ttl_s=60.0)
    assert lease.acquire("other-lease", "run-1", now=100.0, ttl_s=60.0), "leases are independent"


def test_racing_creators_produce_exactly_one_owner(stores: tuple[Any, Any, Any]) -> None:
    claims, _, _ = stores
    with ThreadPoolExecutor(max_workers=8) as pool:
        wins = list(
            pool.map(lambda i: claims.create_if_absent(NodeClaim("race", "p", "n", reason=str(i))), range(16))
        )
    assert wins.count(True) == 1
    assert claims.get("race").reason == str(wins.index(True))
