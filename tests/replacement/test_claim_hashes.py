"""Node claims remember the pool and node-class hashes they were built from, in both claim stores.

Matrix: the hashes survive put/get, list, by_instance, create_if_absent and compare_and_put in DynamoDB (moto)
and in memory; a record written before the fields existed reads back with None; a record written by a newer
version with a field this one does not know still reads; `claim_hashes` is the planner's drift hashes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable, claim_to_doc
from longshore.adapters.memory import MemoryClaimStore
from longshore.core.claims import NodeClaim
from longshore.core.disruption.drift import claim_hashes, nodeclass_hash, nodepool_hash
from longshore.ports.store import ClaimStore
from longshore_sim.aws import create_table
from tests.replacement.conftest import cluster_config, pool

TABLE = "longshore-hashes"


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    if request.param == "memory":
        yield MemoryClaimStore()
        return
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        yield DynamoClaimStore(DynamoTable(client, TABLE))


def hashed_claim(claim_id: str = "general-abc") -> NodeClaim:
    config = cluster_config()
    the_pool = config.pool("general")
    pool_hash, class_hash = claim_hashes(the_pool, config.node_class_of(the_pool))
    return NodeClaim(
        id=claim_id,
        nodepool="general",
        node_class="default",
        instance_id="i-0123456789abcdef0",
        state="launched",
        nodepool_hash=pool_hash,
        nodeclass_hash=class_hash,
    )


def test_claim_hashes_are_the_planners_drift_hashes() -> None:
    config = cluster_config()
    the_pool = config.pool("general")
    klass = config.node_class_of(the_pool)
    assert claim_hashes(the_pool, klass) == (nodepool_hash(the_pool), nodeclass_hash(klass))
    tainted = replace(the_pool, labels=(("team", "web"),))
    assert claim_hashes(tainted, klass)[0] != claim_hashes(the_pool, klass)[0]
    assert claim_hashes(pool("other"), klass)[1] == claim_hashes(the_pool, klass)[1]


def test_the_hashes_are_stored_and_read_back(store: ClaimStore) -> None:
    claim = hashed_claim()
    assert store.create_if_absent(claim)
    for read in (store.get(claim.id), store.by_instance("i-0123456789abcdef0"), store.list()[0]):
        assert read is not None
        assert (read.nodepool_hash, read.nodeclass_hash) == (claim.nodepool_hash, claim.nodeclass_hash)
    written = store.compare_and_put(replace(claim, state="registered"))
    assert written is not None
    again = store.get(claim.id)
    assert again is not None and again.state == "registered" and again.nodepool_hash == claim.nodepool_hash


def test_records_from_older_and_newer_versions_read() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        store = DynamoClaimStore(DynamoTable(client, TABLE))
        for claim_id, change in (("old-1", ("nodepool_hash", "nodeclass_hash")), ("new-1", ())):
            doc = json.loads(claim_to_doc(hashed_claim(claim_id)))
            for key in change:
                del doc[key]  # written before the fields existed
            if not change:
                doc["a_field_from_the_future"] = 1  # written by a newer version during a deployment
            client.put_item(
                TableName=TABLE,
                Item={
                    "pk": {"S": f"claim#{claim_id}"},
                    "sk": {"S": "claim"},
                    "doc": {"S": json.dumps(doc)},
                    "state": {"S": "launched"},
                    "version": {"N": "0"},
                },
            )
        old, new = store.get("old-1"), store.get("new-1")
    assert old is not None and (old.nodepool_hash, old.nodeclass_hash) == (None, None)
    assert new is not None and new.nodepool_hash == hashed_claim().nodepool_hash
