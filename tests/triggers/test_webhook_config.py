"""deploy/webhook.yaml sends the trigger function exactly the admissions that wake something: its
`matchConditions` (CEL, evaluated here with cel-python as the API server would) agree with
`core.triggers.admission_targets` on every combination of operation, binding, owner and mirror annotation."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import celpy  # type: ignore[import-untyped]
import pytest
import yaml

from longshore.core.triggers import admission_targets

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "events" / "admission"


def _webhook() -> dict[str, Any]:
    text = (REPO / "deploy" / "webhook.yaml").read_text().replace("${LONGSHORE_WEBHOOK_URL}", "https://x/s")
    document: dict[str, Any] = yaml.safe_load(text)
    (webhook,) = document["webhooks"]
    return webhook


def _sends(operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
    environment = celpy.Environment()
    activation = {
        "request": celpy.json_to_cel({"operation": operation}),
        "object": celpy.json_to_cel(obj),
        "oldObject": celpy.json_to_cel(old),
    }
    return all(
        bool(environment.program(environment.compile(c["expression"])).evaluate(activation))
        for c in _webhook()["matchConditions"]
    )


def _pods() -> list[dict[str, Any]]:
    pods = []
    for node, owner, mirror in itertools.product(
        (None, "", "node-1"), (None, "ReplicaSet", "DaemonSet", "Node", "Job"), (False, True)
    ):
        meta: dict[str, Any] = {"name": "p", "namespace": "default"}
        if owner:
            meta["ownerReferences"] = [{"kind": owner, "name": "o"}]
        if mirror:
            meta["annotations"] = {"kubernetes.io/config.mirror": "hash"}
        pods.append({"metadata": meta, "spec": {} if node is None else {"nodeName": node}})
    return pods


@pytest.mark.parametrize("operation", ["CREATE", "DELETE"])
@pytest.mark.slow
def test_match_conditions_agree_with_the_decision_table(operation: str) -> None:
    for pod in _pods():
        obj, old = (pod, None) if operation == "CREATE" else (None, pod)
        assert _sends(operation, obj, old) == bool(admission_targets(operation, "Pod", obj, old)), pod


@pytest.mark.slow
def test_the_samples_the_webhook_sends_are_the_ones_that_wake_something() -> None:
    for path in sorted(SAMPLES.glob("admission-*.json")):
        request = json.loads(json.loads(path.read_text())["body"])["request"]
        obj, old = request.get("object"), request.get("oldObject")
        expected = bool(admission_targets(request["operation"], "Pod", obj, old))
        assert _sends(request["operation"], obj, old) == expected, path.name


def test_only_pod_creations_and_deletions_reach_it_and_it_never_blocks() -> None:
    webhook = _webhook()
    assert webhook["rules"] == [
        {
            "operations": ["CREATE", "DELETE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    assert webhook["failurePolicy"] == "Ignore" and webhook["timeoutSeconds"] <= 2
    assert webhook["clientConfig"] == {"url": "https://x/s"}
