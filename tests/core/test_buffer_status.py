"""A CapacityBuffer's `status` as SIG Autoscaling's API defines it (`core.buffer_status`), where the buffers
come from (`services.buffer_pods.read_buffers`), and who hears about them (`services.buffer_status`): a status
written back for a cluster object only when it changes, a log line for a config-file buffer, one metric."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, cast

import pytest

from longshore.core import telemetry
from longshore.core.buffer_status import Placement, buffer_status, describe, invalid_status
from longshore.core.buffers import BufferTemplate, CapacityBuffer, parse_buffer, resolve
from longshore.core.model import ClusterConfig
from longshore.core.scheduling.plan import ClaimPlan, ExistingPlacement, Plan
from longshore.services.buffer_pods import read_buffers
from longshore.services.buffer_status import BufferReporter
from tests.builders import pod
from tests.fakes import Metrics

SPEC = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
TEMPLATES = {("default", "warm"): {"metadata": {"generation": 3}, "template": {"spec": SPEC}}}
T0, T1 = 1_767_225_600.0, 1_767_225_660.0  # 2026-01-01T00:00:00Z, one minute later


def manifest(name: str = "warm", generation: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1alpha1",
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": "default", "generation": generation},
        "spec": spec or {"podTemplateRef": {"name": "warm"}, "replicas": 2},
    }


def conditions(status: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["lastTransitionTime"]) for c in status["conditions"]}


def test_a_held_buffer_reports_replicas_template_and_both_conditions_true() -> None:
    obj = manifest()
    resolved = resolve(parse_buffer(obj), TEMPLATES, {})
    status = buffer_status(resolved, Placement(existing=1, new=1), obj, T0)
    assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    assert (status["replicas"], status["podTemplateRef"], status["podTemplateGeneration"]) == (
        2,
        {"name": "warm"},
        3,
    )
    assert conditions(status) == {
        "ReadyForProvisioning": ("True", "AttributesSetSuccessfully", "2026-01-01T00:00:00Z"),
        "Provisioning": ("True", "FakePodsInjected", "2026-01-01T00:00:00Z"),
    }
    assert all(c["observedGeneration"] == 2 for c in status["conditions"])
    assert "1 on new NodeClaims" in status["conditions"][1]["message"]


def test_a_transition_time_stays_while_the_condition_holds_and_moves_when_it_flips() -> None:
    obj = manifest()
    resolved = resolve(parse_buffer(obj), TEMPLATES, {})
    obj["status"] = buffer_status(resolved, Placement(existing=2), obj, T0)
    again = buffer_status(resolved, Placement(existing=1, unplaced=1), obj, T1)
    assert conditions(again)["ReadyForProvisioning"][2] == "2026-01-01T00:00:00Z"
    assert conditions(again)["Provisioning"] == ("False", "CapacityNotAvailable", "2026-01-01T00:01:00Z")


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"podTemplateRef": {"name": "gone"}}, "ReferenceNotFound"),
        ({"scalableRef": {"kind": "Deployment", "name": "web"}}, "ReferenceNotFound"),
    ],
)
def test_an_unready_buffer_says_why_and_has_no_replicas(spec: dict[str, Any], reason: str) -> None:
    obj = manifest(**spec)
    status = buffer_status(resolve(parse_buffer(obj), TEMPLATES, {}), Placement(), obj, T0)
    assert "replicas" not in status
    assert conditions(status)["ReadyForProvisioning"][:2] == ("False", reason)
    assert conditions(status)["Provisioning"][:2] == ("False", "NotReadyForProvisioning")


def test_an_empty_buffer_and_an_invalid_one() -> None:
    obj = manifest(podTemplateRef={"name": "warm"}, replicas=0)
    status = buffer_status(resolve(parse_buffer(obj), TEMPLATES, {}), Placement(), obj, T0)
    assert status["replicas"] == 0 and conditions(status)["Provisioning"][:2] == ("False", "BufferIsEmpty")
    invalid = invalid_status("spec.replicas: must be a non-negative integer (got -1)", manifest(), T0)
    assert conditions(invalid)["ReadyForProvisioning"][:2] == ("False", "InvalidBuffer")
    assert "(got -1)" in invalid["conditions"][0]["message"]


def test_placement_counts_where_a_plan_put_each_buffers_virtual_pods() -> None:
    resolved = resolve(parse_buffer(manifest(podTemplateRef={"name": "warm"}, replicas=3)), TEMPLATES, {})
    keys = [p.key for p in resolved.pods]
    plan = Plan(
        new_claims=(cast(ClaimPlan, SimpleNamespace(name="general-1", pods=(keys[1],))),),
        existing=(ExistingPlacement("node-a", (keys[0],)),),
    )
    assert Placement.of(plan, (resolved,)) == {"default/warm": Placement(existing=1, new=1, unplaced=1)}
    assert Placement.of(None, (resolved,)) == {"default/warm": Placement(unplaced=3)}


class Source:
    """A `BufferSource` that counts what it was asked for."""

    def __init__(self, buffers: list[dict[str, Any]]) -> None:
        self.buffers = buffers
        self.calls: list[str] = []
        self.written: list[tuple[str, str, Mapping[str, Any]]] = []

    def list_buffers(self) -> list[dict[str, Any]]:
        self.calls.append("buffers")
        return self.buffers

    def pod_templates(self) -> dict[tuple[str, str], dict[str, Any]]:
        self.calls.append("templates")
        return dict(TEMPLATES)

    def workloads(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        self.calls.append("workloads")
        return {}

    def write_buffer_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self.written.append((namespace, name, status))
        for obj in self.buffers:
            if obj["metadata"]["name"] == name:
                obj["status"] = status


def config(pool_source: str = "config", *buffers: CapacityBuffer) -> ClusterConfig:
    template = BufferTemplate("default", "local", pod("local", cpu="2"))
    return ClusterConfig(
        "demo",
        "us-east-1",
        "1.31",
        (),
        (),
        pool_source=pool_source,
        buffers=buffers,
        buffer_templates=(template,),
    )


def test_a_cluster_object_wins_over_a_config_file_buffer_and_the_cluster_is_asked_only_for_what_is_needed() -> (
    None
):
    from_file = CapacityBuffer("default", "warm", pod_template="local", replicas=1, origin="c.yaml:9")
    only_file = CapacityBuffer("default", "spare", pod_template="local", replicas=1, origin="c.yaml:20")
    source = Source([manifest()])
    found = read_buffers(source, config("both", from_file, only_file))
    assert [(r.buffer.key, r.buffer.origin, len(r.pods)) for r in found.resolved] == [
        ("default/spare", "c.yaml:20", 1),
        ("default/warm", "", 2),
    ]
    assert source.calls == ["buffers", "templates"]  # no scalableRef: no workload list
    config_only = Source([manifest()])
    assert [r.buffer.key for r in read_buffers(config_only, config("config", only_file)).resolved] == [
        "default/spare"
    ]
    assert config_only.calls == []  # poolSource config, and the template is in the file


def test_the_reporter_writes_a_changed_status_once_logs_a_config_buffer_once_and_counts_unplaced_pods(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from_file = CapacityBuffer("default", "spare", pod_template="local", replicas=1, origin="c.yaml:20")
    source = Source([manifest(), manifest("broken", podTemplateRef={"name": "warm"}, replicas=-1)])
    metrics = Metrics()
    reporter = BufferReporter(source, metrics)
    caplog.set_level(logging.INFO, logger="longshore.services.buffer_status")
    for now in (T0, T1):
        found = read_buffers(source, config("both", from_file))
        reporter.report(found, None, now)
    assert [(ns, name) for ns, name, _ in source.written] == [("default", "warm"), ("default", "broken")]
    assert [r.getMessage() for r in caplog.records if "config file" in r.getMessage()] == [
        "CapacityBuffer (config file): default/spare (c.yaml:20): 1 replicas; 0 virtual pod(s) on capacity "
        "that exists or is launching, 0 on new NodeClaims, 1 placed nowhere"
    ]
    assert metrics.emitted(telemetry.BUFFER_PODS_UNPLACED, 3.0)
    assert describe(found.resolved[0], Placement(existing=1)).startswith(
        "default/spare (c.yaml:20): 1 replicas"
    )
