"""CapacityBuffer objects: validation with the object, field and value named, and resolution to virtual pods."""

from __future__ import annotations

from typing import Any

import pytest

from longshore.core.buffers import (
    VIRTUAL_ANNOTATION,
    BufferError,
    is_virtual,
    parse_buffer,
    resolve,
    resolve_all,
)

TEMPLATE_SPEC = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
TEMPLATES = {("default", "warm"): {"kind": "PodTemplate", "template": {"spec": TEMPLATE_SPEC}}}
WORKLOADS = {
    ("Deployment", "default", "web"): {
        "kind": "Deployment",
        "spec": {"replicas": 10, "template": {"metadata": {"labels": {"app": "web"}}, "spec": TEMPLATE_SPEC}},
    }
}


def buffer(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1alpha1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": spec,
    }


def test_pod_template_buffer_resolves_to_replicas_virtual_pods() -> None:
    resolved = resolve(parse_buffer(buffer(podTemplateRef={"name": "warm"}, replicas=2)), TEMPLATES, {})
    assert resolved.ready
    assert [p.name for p in resolved.pods] == ["capacitybuffer-b-0", "capacitybuffer-b-1"]
    assert all(is_virtual(p) and p.requests.get("cpu") == 1000 for p in resolved.pods)
    assert dict(resolved.pods[0].annotations)[VIRTUAL_ANNOTATION] == "default/b"


def test_percentage_of_a_deployment_rounds_up_and_uses_its_template() -> None:
    spec = {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}, "percentage": 15}
    resolved = resolve(parse_buffer(buffer(**spec)), {}, WORKLOADS)
    assert len(resolved.pods) == 2  # ceil(15% of 10)
    assert resolved.pods[0].label_map() == {"app": "web"}


def test_limits_cap_the_count() -> None:
    spec = {"podTemplateRef": {"name": "warm"}, "replicas": 5, "limits": {"cpu": "2500m"}}
    assert len(resolve(parse_buffer(buffer(**spec)), TEMPLATES, {}).pods) == 2


def test_missing_template_is_not_ready_with_a_reason() -> None:
    resolved = resolve(parse_buffer(buffer(podTemplateRef={"name": "gone"}, replicas=1)), TEMPLATES, {})
    assert resolved.pods == ()
    assert resolved.reason == "PodTemplate default/gone not found"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"replicas": 1}, "spec"),
        ({"podTemplateRef": {"name": "warm"}, "scalableRef": {"kind": "Deployment", "name": "w"}}, "spec"),
        ({"podTemplateRef": {"name": "warm"}, "replicas": -1}, "spec.replicas"),
        ({"podTemplateRef": {"name": "warm"}, "percentage": 10}, "spec.percentage"),
        ({"scalableRef": {"kind": "CronJob", "name": "w"}}, "spec.scalableRef.kind"),
        ({"podTemplateRef": {"name": "warm"}, "limits": {"cpu": "lots"}}, "spec.limits.cpu"),
        (
            {"podTemplateRef": {"name": "warm"}, "provisioningStrategy": "x/standby"},
            "spec.provisioningStrategy",
        ),
    ],
)
def test_invalid_buffers_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(BufferError) as caught:
        parse_buffer(buffer(**spec))
    assert caught.value.field == field
    assert str(caught.value).startswith("capacitybuffers.autoscaling.x-k8s.io/default/b: ")


def test_resolve_all_keeps_going_past_invalid_buffers() -> None:
    resolved, errors = resolve_all(
        [buffer(podTemplateRef={"name": "warm"}, replicas=1), buffer(replicas=1)], TEMPLATES, {}
    )
    assert len(resolved) == 1 and len(errors) == 1
