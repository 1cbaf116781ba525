"""Equal values kept once (`decode.Shared`, `snapshot.shared_parts`): what makes 150,000 cached pods fit.

Matrix: two replicas compact to the same containers, tolerations and conditions objects and the same label
strings, with their own metadata (name, uid); the compact pod equals the one built without sharing; values
that differ (`True` and `1`) are never merged; a full table empties and shares again; a parsed pod keeps
equal values with shared label pairs and requests, and equals what `parse_pod` returns; requests are computed
once per shared containers list, a changed list is computed again, a malformed one is never remembered.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from bench.scale_objects import pod

from longshore.adapters.kube import decode
from longshore.core.pods import Pod
from longshore.services import snapshot


def _replica(i: int) -> dict[str, Any]:
    manifest = pod(i, "node-a")
    manifest["metadata"]["uid"] = f"uid-{i}"
    manifest["metadata"]["resourceVersion"] = str(10 + i)
    return json.loads(json.dumps(manifest))  # as decoded from a page: no strings shared by construction


def test_replicas_share_their_equal_parts() -> None:
    first, second = decode.compact_pod(_replica(300)), decode.compact_pod(_replica(600))
    for key in ("containers", "tolerations", "nodeSelector"):
        assert first["spec"][key] is second["spec"][key]
    assert first["status"]["conditions"] is second["status"]["conditions"]
    assert first["metadata"]["labels"] is not second["metadata"]["labels"]  # each pod's own map...
    assert first["metadata"]["labels"]["tier"] is second["metadata"]["labels"]["tier"]  # ...of shared strings
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_sharing_changes_no_value() -> None:
    manifest = _replica(5)
    unshared = decode.Shared(limit=0)
    original, decode.SHARED = decode.SHARED, unshared  # type: ignore[misc]
    try:
        alone = decode.compact_pod(copy.deepcopy(manifest))
    finally:
        decode.SHARED = original  # type: ignore[misc]
    assert decode.compact_pod(copy.deepcopy(manifest)) == alone


def test_values_that_differ_are_not_merged() -> None:
    shared = decode.Shared()
    assert shared.value([True]) == [True] and shared.value([1]) == [1] and shared.value([1.0]) == [1.0]
    assert type(shared.value([1])[0]) is int and type(shared.value([1.0])[0]) is float


def test_a_full_table_empties_and_shares_again() -> None:
    shared = decode.Shared(limit=2)
    a, b = shared.value(["a"]), shared.value(["b"])
    shared.trim()
    c = shared.value(["a"])
    assert c == a and shared.value(["a"]) is c and b == ["b"]


def test_parsed_pods_share_equal_parts_and_stay_equal() -> None:
    one, two = (decode.compact_pod(_replica(i)) for i in (300, 600))
    parsed = [snapshot.PodCache().parse(m) for m in (one, two)]
    assert all(isinstance(p, Pod) for p in parsed)
    first, second = parsed
    assert isinstance(first, Pod) and isinstance(second, Pod)
    assert first == snapshot.parse_pod(one) and second == snapshot.parse_pod(two)
    assert first.requests is second.requests and first.tolerations is second.tolerations
    assert dict(first.labels)["tier"] == "backend"
    tier = next(pair for pair in first.labels if pair[0] == "tier")
    assert tier is next(pair for pair in second.labels if pair[0] == "tier")


def test_requests_are_computed_once_per_shared_containers_and_stay_exact() -> None:
    one, two = (decode.compact_pod(_replica(i)) for i in (301, 601))
    assert one["spec"]["containers"] is two["spec"]["containers"]
    first, second = snapshot.parse_pod(one), snapshot.parse_pod(two)
    assert isinstance(first, Pod) and isinstance(second, Pod) and first.requests is second.requests
    bigger = copy.deepcopy(one)
    bigger["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    parsed = snapshot.parse_pod(bigger)
    assert isinstance(parsed, Pod) and parsed.requests.get("cpu") == 2050
    broken = copy.deepcopy(one)
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    assert isinstance(snapshot.parse_pod(broken), snapshot.Skipped)
    assert isinstance(snapshot.parse_pod(broken), snapshot.Skipped)  # a failure is never remembered
