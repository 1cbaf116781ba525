"""The cluster config file: its settings, the three ways it carries pools, bundling for SSM, and its errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from longshore.config import ConfigErrors, bundle_cluster, load_cluster, load_cluster_text
from longshore.core.model import ClusterConfig, InterruptionSettings, Origin, Settings
from tests.conftest import REPO, VALID_MANIFESTS, VALID_V1_MANIFESTS

DEMO = REPO / "clusters" / "demo.yaml"

CLUSTER = """apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata:
  name: prod-eu
spec:
  region: eu-west-1
  kubernetesVersion: "1.30"
  interruption:
    queueName: prod-eu-interruption
    maxReceiveCount: 3
    rebalance: notify
    rebalanceByPool:
      general: replace
  settings:
    vmMemoryOverheadPercent: 0.05
    reservedENIs: 1
    batchIdleDuration: 2s
    batchMaxDuration: 30s
"""


BARE = CLUSTER.replace("    rebalanceByPool:\n      general: replace\n", "")


def _located_nowhere(origin: Origin) -> Origin:
    return dataclasses.replace(origin, file="", line=None)


def _without_origins(config: ClusterConfig) -> ClusterConfig:
    """The cluster with the file and line of every document removed (the dialect is kept)."""
    return dataclasses.replace(
        config,
        node_pools=tuple(
            dataclasses.replace(p, origin=_located_nowhere(p.origin)) for p in config.node_pools
        ),
        node_classes=tuple(
            dataclasses.replace(c, origin=_located_nowhere(c.origin)) for c in config.node_classes
        ),
    )


def test_cluster_document_with_pools_in_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER + "---\n" + (VALID_V1_MANIFESTS / "01-default-al2023.yaml").read_text())
    config = load_cluster([path], region="us-east-1", cluster_name="ignored")
    assert (config.name, config.region, config.kubernetes_version) == ("prod-eu", "eu-west-1", "1.30")
    assert config.interruption == InterruptionSettings("prod-eu-interruption", "notify", 3)
    assert config.settings == Settings(0.05, 1, 2.0, 30.0)
    assert config.pool("general").rebalance == "replace"


def test_defaults_without_a_cluster_document_come_from_the_arguments() -> None:
    config = load_cluster(
        [VALID_MANIFESTS / "02-spot-limits.yaml"], region="ap-northeast-2", cluster_name="seed"
    )
    assert (config.name, config.region, config.kubernetes_version) == ("seed", "ap-northeast-2", "1.31")
    assert config.interruption == InterruptionSettings() and config.settings == Settings()
    assert config.pool("default").rebalance == "ignore"


def test_pools_by_include_and_inline_manifests_give_the_same_cluster(tmp_path: Path) -> None:
    pools = tmp_path / "pools"
    pools.mkdir()
    (pools / "general.yaml").write_text((VALID_V1_MANIFESTS / "01-default-al2023.yaml").read_text())
    included = tmp_path / "included.yaml"
    included.write_text(CLUSTER + "  include:\n    - pools/*.yaml\n")
    documents = list(yaml.safe_load_all((VALID_V1_MANIFESTS / "01-default-al2023.yaml").read_text()))
    inline = tmp_path / "inline.yaml"
    cluster = yaml.safe_load(CLUSTER)
    cluster["spec"]["manifests"] = documents
    inline.write_text(yaml.safe_dump(cluster, sort_keys=False))
    by_include, by_inline = load_cluster([included]), load_cluster([inline])
    assert _without_origins(by_include) == _without_origins(by_inline)
    assert by_include.pool("general").origin.file == str(pools / "general.yaml")
    assert by_include.pool("general").rebalance == "replace"


def test_errors_inside_inline_manifests_carry_the_cluster_file_lines(tmp_path: Path) -> None:
    path = tmp_path / "inline.yaml"
    path.write_text(
        CLUSTER
        + "  manifests:\n"
        + "    - apiVersion: karpenter.sh/v1alpha5\n"
        + "      kind: Provisioner\n"
        + "      metadata: {name: general}\n"
        + "      spec:\n"
        + "        providerRef: {name: default}\n"
        + "        weight: 1000\n"
    )
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([path])
    weight = next(e for e in caught.value.errors if e.path == "spec.weight")
    assert (weight.file, weight.line, weight.document) == (str(path), 25, "Provisioner/general")


def test_include_that_matches_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(BARE + "  include: [missing/*.yaml]\n")
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([path])
    (error,) = caught.value.errors
    assert error.path == "spec.include[0]" and "matches no file" in error.message


def test_rebalance_override_must_name_a_pool(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        CLUSTER.replace("general: replace", "generall: replace")
        + "---\n"
        + (VALID_V1_MANIFESTS / "01-default-al2023.yaml").read_text()
    )
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([path])
    (error,) = caught.value.errors
    assert error.path == "spec.interruption.rebalanceByPool.generall"
    assert error.message == "no pool is named 'generall' (did you mean 'general'?)"


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (("eu-west-1", "Europe"), "spec.region", "not an AWS region name"),
        (('"1.30"', "1.30"), "spec.kubernetesVersion", "must be a quoted string"),
        (
            ("rebalance: notify", "rebalance: always"),
            "spec.interruption.rebalance",
            "not one of ignore, notify, replace",
        ),
        (("maxReceiveCount: 3", "maxReceiveCount: 0"), "spec.interruption.maxReceiveCount", "outside 1-1000"),
        (
            ("batchIdleDuration: 2s", "batchIdleDuration: 1m"),
            "spec.settings.batchIdleDuration",
            "must not exceed",
        ),
        (("reservedENIs: 1", "reservedENis: 1"), "spec.settings.reservedENis", "did you mean 'reservedENIs'"),
    ],
)
def test_cluster_document_errors(change: tuple[str, str], path: str, words: str) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(CLUSTER.replace(*change), "cluster.yaml")
    error = next(e for e in caught.value.errors if e.path == path)
    assert words in error.message and error.document == "Cluster/prod-eu"


def test_only_one_cluster_document(tmp_path: Path) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(CLUSTER + "---\n" + CLUSTER, "twice.yaml")
    assert any("only one Cluster document is allowed" in e.message for e in caught.value.errors)


def test_include_is_refused_in_text() -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(BARE + "  include: [pools/*.yaml]\n", "ssm:/longshore/demo")
    assert "bundle the files first" in caught.value.errors[0].message


def test_default_instance_profile_fills_v1alpha5_templates(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        BARE.replace(
            "    reservedENIs: 1\n", "    reservedENIs: 1\n    defaultInstanceProfile: NodeProfile\n"
        )
    )
    config = load_cluster([path, VALID_MANIFESTS / "02-spot-limits.yaml"])
    assert config.node_classes[0].instance_profile == "NodeProfile"
    assert config.settings.default_instance_profile == "NodeProfile"


@pytest.mark.parametrize(
    "paths", [[DEMO], [VALID_MANIFESTS / "06-workernode-al2.yaml"]], ids=["cluster", "plain"]
)
def test_bundle_round_trips_through_text(paths: list[Path]) -> None:
    text = bundle_cluster(paths, cluster_name="bundled")
    assert "include" not in text
    from_text = load_cluster_text(text, "ssm:/longshore/config")
    assert _without_origins(from_text) == _without_origins(load_cluster(paths, cluster_name="bundled"))


def test_bundle_inlines_included_files(tmp_path: Path) -> None:
    (tmp_path / "pools").mkdir()
    (tmp_path / "pools" / "a.yaml").write_text((VALID_V1_MANIFESTS / "01-default-al2023.yaml").read_text())
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER + "  include: [pools/a.yaml]\n")
    documents = list(yaml.safe_load_all(bundle_cluster([cluster])))
    assert [d["kind"] for d in documents] == ["Cluster", "NodePool", "EC2NodeClass"]
    assert "include" not in documents[0]["spec"]


def test_bundle_refuses_an_invalid_configuration() -> None:
    with pytest.raises(ConfigErrors):
        bundle_cluster(
            [REPO / "tests" / "fixtures" / "karpenter" / "seed-manifests" / "invalid" / "01-label-typo.yaml"]
        )


def test_the_example_cluster_config_loads() -> None:
    config = load_cluster([DEMO])
    assert config.name == "demo" and config.region == "us-east-1"
    assert {p.name for p in config.node_pools} == {"general", "spot-batch"}
    assert config.pool("spot-batch").rebalance == "replace"
    assert config.pool("general").rebalance == config.interruption.rebalance_default == "notify"


def test_the_documented_example_is_the_example_cluster_config() -> None:
    assert DEMO.read_text() in (REPO / "docs" / "config.md").read_text()
