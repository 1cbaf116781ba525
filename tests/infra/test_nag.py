"""cdk-nag AwsSolutions: no unacknowledged finding, every acknowledgement with its reason, and the checks ran."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.conftest import Synthesis

pytestmark = [pytest.mark.slow, pytest.mark.cdk]


def _findings(synthesis: Synthesis, stack: str) -> list[tuple[str, str, str]]:
    return [m for m in synthesis.messages[stack] if m[0] in ("error", "warning") and "AwsSolutions-" in m[2]]


@pytest.mark.parametrize("stack", ["Longshore-demo", "UserStack"])
def test_no_unacknowledged_awssolutions_findings(synthesis: Synthesis, stack: str) -> None:
    assert _findings(synthesis, stack) == []


def test_the_checks_ran_they_flag_a_queue_without_tls_or_dlq(synthesis: Synthesis) -> None:
    rules = {message.split(":", 1)[0] for _, _, message in _findings(synthesis, "NagCanary")}
    assert {"AwsSolutions-SQS3", "AwsSolutions-SQS4"} <= rules


def _suppressions(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        rule
        for resource in template["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]


@pytest.mark.parametrize("stack", ["demo", "private"])
def test_every_acknowledgement_has_a_reason_and_wildcards_are_acknowledged_by_exact_pattern(
    synthesis: Synthesis, stack: str
) -> None:
    suppressions = _suppressions(getattr(synthesis, stack))
    assert suppressions
    own_topic = {"AwsSolutions-SNS2"} if stack == "demo" else set()  # private passes alarmTopicArn
    assert {rule["id"] for rule in suppressions} == {
        "AwsSolutions-IAM5",
        "AwsSolutions-L1",
        "AwsSolutions-SMG4",  # the webhook secret: rotation is by hand (docs/security.md)
        *own_topic,
    }
    for rule in suppressions:
        assert len(rule["reason"]) >= 60, rule
        if rule["id"] == "AwsSolutions-IAM5":
            assert rule.get("applies_to"), (
                f"an IAM5 acknowledgement without appliesTo covers every wildcard: {rule}"
            )
    patterns = json.dumps([r.get("applies_to") for r in suppressions])
    assert "Resource::*" in patterns
