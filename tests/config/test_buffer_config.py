"""CapacityBuffer and PodTemplate documents in the cluster config file: valid ones are loaded and used like
the cluster's; every bad one is an error naming the file, the line, the document, the field and the value."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings

from longshore.config import ConfigErrors, load_cluster_text
from longshore.config.cluster_objects import merge_cluster_objects
from longshore.services.buffer_pods import resolve_buffers
from tests.config.test_bad_input import nodepool
from tests.fuzz.mutate import yaml_text

TEMPLATE = """apiVersion: v1
kind: PodTemplate
metadata:
  name: warm
  namespace: apps
template:
  metadata:
    labels: {app: warm}
  spec:
    containers:
      - name: pause
        image: pause
        resources:
          requests: {cpu: "1", memory: 1Gi}
"""


def buffer_doc(spec: str, name: str = "warm") -> str:
    return f"""apiVersion: autoscaling.x-k8s.io/v1alpha1
kind: CapacityBuffer
metadata:
  name: {name}
  namespace: apps
spec:
{spec}"""


def config(*documents: str) -> str:
    return "---\n".join([nodepool(), TEMPLATE, *documents])


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(text, "cluster.yaml")
    return [str(error) for error in caught.value]


def test_a_config_file_buffer_and_its_pod_template_are_loaded_and_resolve_without_the_cluster() -> None:
    loaded = load_cluster_text(
        config(buffer_doc("  podTemplateRef: {name: warm}\n  replicas: 2\n")), "c.yaml"
    )
    (buffer,) = loaded.buffers
    assert (buffer.key, buffer.replicas, buffer.pod_template) == ("apps/warm", 2, "warm")
    assert buffer.origin.startswith("c.yaml:")
    (resolved,) = resolve_buffers(None, loaded)
    assert resolved.ready and [p.requests.get("cpu") for p in resolved.pods] == [1000, 1000]
    assert resolved.pods[0].label_map() == {"app": "warm"}


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        ("  podTemplateRef: {name: warm}\n  replica: 2\n", "spec.replica", "replica"),
        ("  replicas: 2\n", "spec", "neither is set"),
        (
            "  podTemplateRef: {name: warm}\n  scalableRef: {kind: Deployment, name: web}\n",
            "spec",
            "both are set",
        ),
        ("  podTemplateRef: {name: warm}\n  replicas: -1\n", "spec.replicas", "-1"),
        ("  podTemplateRef: {name: warm}\n  replicas: '2'\n", "spec.replicas", "'2'"),
        ("  podTemplateRef: {name: warm}\n  percentage: 20\n", "spec.percentage", "20"),
        ("  scalableRef: {kind: Job, name: batch}\n", "spec.scalableRef.kind", "'Job'"),
        ("  scalableRef: {kind: Deployment}\n", "spec.scalableRef.name", "name"),
        ("  podTemplateRef: {name: ''}\n", "spec.podTemplateRef.name", "empty"),
        ("  podTemplateRef: {name: warm}\n  limits: {cpu: lots}\n", "spec.limits.cpu", "'lots'"),
        (
            "  podTemplateRef: {name: warm}\n  provisioningStrategy: buffer.gke.io/standby-capacity\n",
            "spec.provisioningStrategy",
            "'buffer.gke.io/standby-capacity'",
        ),
    ],
)
def test_each_bad_buffer_is_an_error_naming_file_line_document_field_and_value(
    spec: str, field: str, value: str
) -> None:
    (error,) = errors_of(config(buffer_doc(spec)))
    assert error.startswith("cluster.yaml:") and "CapacityBuffer/warm" in error
    assert f": {field}: " in error and value in error, error


def test_a_bad_pod_template_and_a_duplicate_buffer_are_errors() -> None:
    bad_template = TEMPLATE.replace("name: warm\n  namespace", "name: cold\n  namespace").replace(
        'cpu: "1"', "cpu: many"
    )
    twice = buffer_doc("  podTemplateRef: {name: warm}\n")
    messages = errors_of(config(bad_template, twice, twice))
    assert any("PodTemplate/cold" in m and "spec" in m and "many" in m for m in messages), messages
    assert any("duplicate CapacityBuffer 'apps/warm'" in m for m in messages), messages


def test_a_wrong_api_version_names_the_one_to_use() -> None:
    text = config(buffer_doc("  podTemplateRef: {name: warm}\n").replace("v1alpha1", "v1beta9"))
    (error,) = errors_of(text)
    assert "autoscaling.x-k8s.io/v1beta9" in error and "use autoscaling.x-k8s.io/v1alpha1" in error


def test_config_file_buffers_stay_whatever_the_pool_source() -> None:
    cluster = "apiVersion: longshore.io/v1alpha1\nkind: Cluster\nmetadata: {name: demo}\nspec:\n  poolSource: cluster\n"
    text = "---\n".join([cluster, config(buffer_doc("  podTemplateRef: {name: warm}\n"))])
    merged = merge_cluster_objects(text, "c.yaml", [], region="us-east-1", cluster_name="demo")
    assert [b.key for b in merged.config.buffers] == ["apps/warm"]
    assert [t.name for t in merged.config.buffer_templates] == ["warm"]


SEED = [
    d
    for d in yaml.safe_load_all(
        config(buffer_doc("  podTemplateRef: {name: warm}\n  replicas: 2\n  limits: {cpu: '3'}\n"))
    )
    if d
]


@pytest.mark.slow
def test_mutated_buffer_documents_end_in_a_config_or_errors_that_name_the_file() -> None:
    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(yaml_text([SEED]))
    def check(text: str) -> None:
        try:
            loaded = load_cluster_text(text, "fuzz.yaml")
        except ConfigErrors as errors:
            assert errors.errors and all(error.file == "fuzz.yaml" for error in errors)
            return
        for resolved in resolve_buffers(None, loaded):  # a loaded buffer always resolves or says why not
            assert resolved.ready or resolved.reason
            assert all(p.requests.get("cpu") >= 0 for p in resolved.pods)

    check()
