"""NodePools, EC2NodeClasses and NodeOverlays from the cluster, merged with the deployed config by `spec.poolSource`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from longshore.config import ConfigErrors
from longshore.config.cluster_objects import merge_cluster_objects

REPO = Path(__file__).resolve().parents[2]
DEMO = (REPO / "clusters" / "demo.yaml").read_text()


def config(pool_source: str | None = None) -> str:
    docs = list(yaml.safe_load_all(DEMO))
    if pool_source is not None:
        docs[0]["spec"]["poolSource"] = pool_source
    return yaml.safe_dump_all(docs, sort_keys=False)


def node_class(name: str = "gitops", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name, "uid": "x", "resourceVersion": "7"},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
            **spec,
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def node_pool(name: str = "gitops", node_class_name: str = "gitops", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": node_class_name,
                    },
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
                    ],
                }
            },
            **spec,
        },
    }


def merge(text: str, objects: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    return merge_cluster_objects(
        text, "ssm:/longshore/demo", objects, region="us-east-1", cluster_name="demo"
    )


def test_the_example_cluster_reads_both_and_a_cluster_pool_joins_the_config_pools() -> None:
    merged = merge(config(), [node_class(), node_pool()])
    assert merged.config.pool_source == "both"  # clusters/demo.yaml sets it
    assert {p.name for p in merged.config.node_pools} == {"general", "spot-batch", "gitops"}
    assert all(v.valid and v.used for v in merged.verdicts)


def test_a_cluster_object_wins_over_the_config_document_of_the_same_name() -> None:
    merged = merge(config(), [node_class("default"), node_pool("general", "default", weight=42)])
    assert merged.config.pool("general").weight == 42
    assert set(merged.shadowed) == {"NodePool/general", "EC2NodeClass/default"}


def test_config_source_ignores_the_cluster_and_cluster_source_ignores_the_config_pools() -> None:
    assert merge(config("config"), [node_class(), node_pool()]).config.pool_source == "config"
    assert {p.name for p in merge(config("config"), [node_class(), node_pool()]).config.node_pools} == {
        "general",
        "spot-batch",
    }
    only_cluster = merge(config("cluster"), [node_class(), node_pool()])
    assert {p.name for p in only_cluster.config.node_pools} == {"gitops"}


def test_an_invalid_pool_is_not_used_and_its_verdict_names_object_field_and_value() -> None:
    bad = node_pool()
    bad["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Within"
    merged = merge(config(), [node_class(), bad])
    assert "gitops" not in {p.name for p in merged.config.node_pools}
    (verdict,) = [v for v in merged.verdicts if v.kind == "NodePool"]
    assert not verdict.valid and not verdict.used
    assert "nodepools.karpenter.sh/gitops" in verdict.message
    assert "operator" in verdict.message and "Within" in verdict.message


def test_a_pool_whose_class_is_invalid_is_invalid_too() -> None:
    broken = node_class(amiSelectorTerms=[])
    merged = merge(config(), [broken, node_pool()])
    verdicts = {v.kind: v for v in merged.verdicts}
    assert (
        not verdicts["EC2NodeClass"].valid
        and "ec2nodeclasses.karpenter.k8s.aws/gitops" in verdicts["EC2NodeClass"].message
    )
    assert not verdicts["NodePool"].valid and "gitops" in verdicts["NodePool"].message
    assert {p.name for p in merged.config.node_pools} == {"general", "spot-batch"}


def test_an_invalid_pool_source_is_a_config_error() -> None:
    with pytest.raises(ConfigErrors, match="poolSource 'everywhere'"):
        merge(config("everywhere"), [])


def test_per_pool_settings_of_the_config_follow_the_pools_that_are_loaded() -> None:
    # spot-batch's rebalance override (clusters/demo.yaml) holds in `both`; in `cluster` it names no pool
    assert merge(config(), [node_class(), node_pool()]).config.pool("spot-batch").rebalance == "replace"
    assert merge(config("cluster"), [node_class(), node_pool()]).config.pool("gitops").rebalance == "notify"


def test_config_is_the_default_source() -> None:
    docs = list(yaml.safe_load_all(DEMO))
    del docs[0]["spec"]["poolSource"]
    merged = merge(yaml.safe_dump_all(docs, sort_keys=False), [node_class(), node_pool()])
    assert merged.config.pool_source == "config" and "gitops" not in {
        p.name for p in merged.config.node_pools
    }


def overlay(name: str = "dear-c5", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name, "resourceVersion": "3"},
        "spec": {
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c5"]}
            ],
            "priceAdjustment": "+100%",
            **spec,
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_node_overlays_in_the_cluster_reach_every_pool_and_an_invalid_one_is_not_used():
    merged = merge_cluster_objects(
        config("both"),
        "ssm:demo",
        [overlay(), overlay("bad", price="1", weight=0)],
        region="us-east-1",
        cluster_name="demo",
    )
    verdicts = {v.name: v for v in merged.verdicts}
    assert verdicts["dear-c5"].valid and not verdicts["bad"].valid
    assert "spec.weight" in verdicts["bad"].message and "nodeoverlays.karpenter.sh/bad" in verdicts["bad"].ref
    assert [o.name for o in merged.config.node_overlays] == ["dear-c5"]
    assert all(p.overlays == merged.config.node_overlays for p in merged.config.node_pools)


def test_node_overlays_in_the_cluster_are_ignored_with_pool_source_config():
    merged = merge_cluster_objects(
        config("config"), "ssm:demo", [overlay()], region="us-east-1", cluster_name="demo"
    )
    assert merged.config.node_overlays == () and merged.verdicts == ()
