"""The claim store, the unavailable-offerings cache and the leases, in one DynamoDB table.

Theory of operation: the table layout is the one in docs/contracts.md: partition key `pk`, sort key `sk`,
TTL attribute `ttl`, GSI `by-instance` on `instance_id`.

    claims               pk="claim#<id>"  sk="claim"                 doc (JSON), state, version, instance_id?
    unavailable offering pk="ice"         sk="<type>#<zone>#<ct>"     until, ttl
    lease                pk="lease#<n>"   sk="lease"                  owner, expires, ttl

A claim is stored as a JSON document (`doc`) plus the attributes conditions and the GSI need (`version`,
`state`, `instance_id` only when set, because a GSI key may not be empty). Ownership decisions are conditional
writes: `create_if_absent` (`attribute_not_exists(pk)`), `compare_and_put` and `delete_if`
(`version = :expected`) and `Lease.acquire` (free, expired or ours). A failed condition is an answer (False/None), never an exception.
Unavailable offerings are one query on `pk="ice"`; DynamoDB's TTL deletes them eventually, and readers filter
by `until > now` because TTL deletion is lazy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from typing import Any

from longshore.adapters.aws.retry import ClientError, PatientClient
from longshore.core.claims import NodeClaim
from longshore.core.model import Requirement

CLAIM_SK = "claim"
ICE_PK = "ice"
LEASE_SK = "lease"
INSTANCE_INDEX = "by-instance"


def _conditional_failed(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def claim_to_doc(claim: NodeClaim) -> str:
    """The JSON document a claim is stored as."""
    return json.dumps(asdict(claim), sort_keys=True, separators=(",", ":"))


_CLAIM_FIELDS = frozenset(f.name for f in fields(NodeClaim))


def claim_from_doc(doc: str) -> NodeClaim:
    """A claim from its stored JSON document (tuples restored).

    Fields the document lacks take their defaults (a claim written before `nodepool_hash` existed reads back
    with None), and fields this version does not know are dropped (a claim written by a newer function
    during a deployment still reads).
    """
    data: dict[str, Any] = {k: v for k, v in json.loads(doc).items() if k in _CLAIM_FIELDS}
    data["requirements"] = tuple(
        Requirement(r["key"], r["operator"], tuple(r["values"]), r.get("min_values"))
        for r in data.get("requirements", ())
    )
    data["instance_types"] = tuple(data.get("instance_types", ()))
    data["pods"] = tuple(data.get("pods", ()))
    data["replaces"] = tuple(data.get("replaces", ()))
    return NodeClaim(**data)


class DynamoTable:
    """The table's name and a DynamoDB client; the three stores below share it. With `sleep` (the Lambda's
    clock), throttling and 5xx answers are retried with bounded backoff after botocore's own attempts
    (`retry.PatientClient`), so a throttled table slows a pass instead of failing it."""

    def __init__(self, client: Any, table_name: str, sleep: Callable[[float], None] | None = None) -> None:
        self.client = PatientClient(client, sleep) if sleep is not None else client
        self.name = table_name


class DynamoClaimStore:
    """`ports.store.ClaimStore` on DynamoDB."""

    def __init__(self, table: DynamoTable) -> None:
        self._t = table

    def _item(self, claim: NodeClaim) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pk": {"S": f"claim#{claim.id}"},
            "sk": {"S": CLAIM_SK},
            "doc": {"S": claim_to_doc(claim)},
            "state": {"S": claim.state},
            "version": {"N": str(claim.version)},
            "nodepool": {"S": claim.nodepool},
        }
        if claim.instance_id:
            item["instance_id"] = {"S": claim.instance_id}
        return item

    def _key(self, claim_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"claim#{claim_id}"}, "sk": {"S": CLAIM_SK}}

    def create_if_absent(self, claim: NodeClaim) -> bool:
        try:
            self._t.client.put_item(
                TableName=self._t.name, Item=self._item(claim), ConditionExpression="attribute_not_exists(pk)"
            )
        except ClientError as error:
            if _conditional_failed(error):
                return False
            raise
        return True

    def get(self, claim_id: str) -> NodeClaim | None:
        response = self._t.client.get_item(
            TableName=self._t.name, Key=self._key(claim_id), ConsistentRead=True
        )
        item = response.get("Item")
        return claim_from_doc(item["doc"]["S"]) if item else None

    def by_instance(self, instance_id: str) -> NodeClaim | None:
        response = self._t.client.query(
            TableName=self._t.name,
            IndexName=INSTANCE_INDEX,
            KeyConditionExpression="instance_id = :i",
            ExpressionAttributeValues={":i": {"S": instance_id}},
        )
        for item in response.get("Items", []):
            if item.get("sk", {}).get("S") == CLAIM_SK:
                return claim_from_doc(item["doc"]["S"])
        return None

    def list(self) -> tuple[NodeClaim, ...]:
        claims: list[NodeClaim] = []
        kwargs: dict[str, Any] = {
            "TableName": self._t.name,
            "FilterExpression": "sk = :sk",
            "ExpressionAttributeValues": {":sk": {"S": CLAIM_SK}},
            "ConsistentRead": True,
        }
        while True:
            response = self._t.client.scan(**kwargs)
            claims.extend(claim_from_doc(item["doc"]["S"]) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                break
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return tuple(sorted(claims, key=lambda c: c.id))

    def put(self, claim: NodeClaim) -> None:
        self._t.client.put_item(TableName=self._t.name, Item=self._item(claim))

    def compare_and_put(self, claim: NodeClaim) -> NodeClaim | None:
        written = replace(claim, version=claim.version + 1)
        try:
            self._t.client.put_item(
                TableName=self._t.name,
                Item=self._item(written),
                ConditionExpression="attribute_exists(pk) AND #v = :expected",
                ExpressionAttributeNames={"#v": "version"},
                ExpressionAttributeValues={":expected": {"N": str(claim.version)}},
            )
        except ClientError as error:
            if _conditional_failed(error):
                return None
            raise
        return written

    def delete(self, claim_id: str) -> None:
        self._t.client.delete_item(TableName=self._t.name, Key=self._key(claim_id))

    def delete_if(self, claim_id: str, expected_version: int) -> bool:
        try:
            self._t.client.delete_item(
                TableName=self._t.name,
                Key=self._key(claim_id),
                ConditionExpression="attribute_exists(pk) AND #v = :expected",
                ExpressionAttributeNames={"#v": "version"},
                ExpressionAttributeValues={":expected": {"N": str(expected_version)}},
            )
        except ClientError as error:
            if _conditional_failed(error):
                return False
            raise
        return True


class DynamoOfferingAvailability:
    """`ports.store.OfferingAvailability` on DynamoDB (`pk="ice"`)."""

    def __init__(self, table: DynamoTable) -> None:
        self._t = table

    def mark_unavailable(self, instance_type: str, zone: str, capacity_type: str, until_epoch: float) -> None:
        self._t.client.put_item(
            TableName=self._t.name,
            Item={
                "pk": {"S": ICE_PK},
                "sk": {"S": f"{instance_type}#{zone}#{capacity_type}"},
                "until": {"N": repr(float(until_epoch))},
                "ttl": {"N": str(int(until_epoch) + 1)},
            },
        )

    def unavailable(self, now: float) -> frozenset[tuple[str, str, str]]:
        keys: set[tuple[str, str, str]] = set()
        kwargs: dict[str, Any] = {
            "TableName": self._t.name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": ICE_PK}},
            "ConsistentRead": True,
        }
        while True:
            response = self._t.client.query(**kwargs)
            for item in response.get("Items", []):
                if float(item["until"]["N"]) > now:
                    instance_type, zone, capacity_type = item["sk"]["S"].split("#", 2)
                    keys.add((instance_type, zone, capacity_type))
            if "LastEvaluatedKey" not in response:
                break
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return frozenset(keys)


class DynamoLease:
    """`ports.store.Lease` on DynamoDB (`pk="lease#<name>"`)."""

    def __init__(self, table: DynamoTable) -> None:
        self._t = table

    def acquire(self, name: str, owner: str, now: float, ttl_s: float) -> bool:
        expires = now + ttl_s
        try:
            self._t.client.put_item(
                TableName=self._t.name,
                Item={
                    "pk": {"S": f"lease#{name}"},
                    "sk": {"S": LEASE_SK},
                    "owner": {"S": owner},
                    "expires": {"N": repr(float(expires))},
                    "ttl": {"N": str(int(expires) + 3600)},
                },
                ConditionExpression="attribute_not_exists(pk) OR #o = :owner OR expires <= :now",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":owner": {"S": owner}, ":now": {"N": repr(float(now))}},
            )
        except ClientError as error:
            if _conditional_failed(error):
                return False
            raise
        return True

    def release(self, name: str, owner: str) -> None:
        try:
            self._t.client.delete_item(
                TableName=self._t.name,
                Key={"pk": {"S": f"lease#{name}"}, "sk": {"S": LEASE_SK}},
                ConditionExpression="#o = :owner",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":owner": {"S": owner}},
            )
        except ClientError as error:
            if not _conditional_failed(error):
                raise
