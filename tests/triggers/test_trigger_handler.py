"""The admission webhook's trigger function: which pod admissions wake which function, the answers it gives the
API server, and bad requests. Samples are function URL events as Lambda delivers them (tests/events/admission)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from longshore.adapters.events.admission import admission_review, function_url_event
from longshore.core.triggers import PLANNER, PROVISIONER, admission_targets
from longshore.wiring import trigger as trigger_handler
from tests.fakes import FakeTrigger

SAMPLES = Path(__file__).resolve().parents[1] / "events" / "admission"


def sample(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SAMPLES / name).read_text())
    return document


def run(event: Any, fail: bool = False) -> tuple[dict[str, Any], FakeTrigger, FakeTrigger]:
    provisioner, planner = FakeTrigger(fail), FakeTrigger(fail)
    response = trigger_handler.process(event, {PROVISIONER: provisioner, PLANNER: planner})
    return response, provisioner, planner


def test_an_unbound_pod_created_wakes_the_provisioner_and_is_allowed() -> None:
    response, provisioner, planner = run(sample("admission-pod-create.json"))

    assert response["statusCode"] == 200
    review = json.loads(response["body"])
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert review["response"] == {"uid": "1b0c-create", "allowed": True}
    assert provisioner.reasons == ["pod default/inflate-7c9f-abcde created"] and planner.reasons == []


def test_a_bound_pod_deleted_wakes_the_planner() -> None:
    response, provisioner, planner = run(sample("admission-pod-delete-bound.json"))

    assert json.loads(response["body"])["response"]["allowed"] is True
    assert planner.reasons == ["pod default/inflate-7c9f-fghij deleted"] and provisioner.reasons == []


def test_a_daemonset_pod_wakes_nothing() -> None:
    response, provisioner, planner = run(sample("admission-daemonset-pod-create.json"))

    assert json.loads(response["body"])["response"]["allowed"] is True
    assert provisioner.reasons == planner.reasons == []


def test_a_base64_body_is_read_as_lambda_delivers_binary_bodies() -> None:
    review = json.loads(sample("admission-pod-create.json")["body"])

    _, provisioner, _ = run(function_url_event(review, base64_body=True))

    assert provisioner.reasons == ["pod default/inflate-7c9f-abcde created"]


def test_a_failing_trigger_still_allows_the_pod() -> None:
    response, _, _ = run(sample("admission-pod-create.json"), fail=True)

    assert response["statusCode"] == 200
    assert json.loads(response["body"])["response"] == {"uid": "1b0c-create", "allowed": True}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (sample("malformed-admission-bad-operation.json"), "the AdmissionReview: request.operation"),
        (sample("malformed-admission-get.json"), "requestContext.http.method: expected POST, got 'GET'"),
        ({"requestContext": {"http": {"method": "POST"}}, "body": "{not json"}, "body: not JSON"),
        (
            {"requestContext": {"http": {"method": "POST"}}, "body": "!!", "isBase64Encoded": True},
            "body: not valid base64",
        ),
        ({"body": "{}"}, "the function URL event: requestContext"),
        (
            function_url_event({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}),
            "apiVersion",
        ),
    ],
)
def test_a_request_that_is_not_an_admission_review_gets_a_400_naming_the_field(
    event: Any, message: str
) -> None:
    response, provisioner, planner = run(event)

    assert response["statusCode"] == 400
    assert message in json.loads(response["body"])["error"]
    assert provisioner.reasons == planner.reasons == []


def test_the_decision_table() -> None:
    unbound = {"metadata": {"name": "p"}, "spec": {}}
    bound = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}
    mirror = {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {}}
    owned_by_node = {"metadata": {"ownerReferences": [{"kind": "Node", "name": "n1"}]}, "spec": {}}

    assert admission_targets("CREATE", "Pod", unbound, None) == (PROVISIONER,)
    assert admission_targets("CREATE", "Pod", bound, None) == ()
    assert admission_targets("CREATE", "Pod", mirror, None) == ()
    assert admission_targets("CREATE", "Pod", owned_by_node, None) == ()
    assert admission_targets("DELETE", "Pod", None, bound) == (PLANNER,)
    assert admission_targets("DELETE", "Pod", None, unbound) == ()
    assert admission_targets("UPDATE", "Pod", bound, bound) == ()
    assert admission_targets("CREATE", "Node", unbound, None) == ()


def test_the_production_wiring_names_the_missing_function(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable, value in {
        "LONGSHORE_CLUSTER_NAME": "demo",
        "AWS_REGION": "us-east-1",
        "LONGSHORE_CONFIG_PARAMETER": "/longshore/demo/config",
        "LONGSHORE_TABLE_NAME": "t",
        "LONGSHORE_PROVISIONER_FUNCTION_NAME": "longshore-demo-provisioner",
        "LONGSHORE_WEBHOOK_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:w",
    }.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.delenv("LONGSHORE_PLANNER_FUNCTION_NAME", raising=False)

    with pytest.raises(Exception, match="LONGSHORE_PLANNER_FUNCTION_NAME"):
        trigger_handler.build_ports()


def test_admission_review_builder_matches_the_samples_shape() -> None:
    pod = json.loads(sample("admission-pod-create.json")["body"])["request"]["object"]
    built = admission_review("u1", "CREATE", pod)
    body = base64.b64encode(json.dumps(built).encode()).decode()

    _, provisioner, _ = run(
        {"requestContext": {"http": {"method": "POST"}}, "body": body, "isBase64Encoded": True}
    )

    assert provisioner.reasons == ["pod default/inflate-7c9f-abcde created"]
