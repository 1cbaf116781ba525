"""The v1alpha5, v1beta1 and v1 forms of the same pool normalise to equal models.

"Equal" means equal after `semantic_view` removes the differences the model keeps on purpose: `Origin`,
`Expiry.forceful` and where the kubelet settings live (see tests/config/convert.py). Everything else (labels,
requirements, taints, consolidation, expiry duration, budgets, limits, weight, AMI, subnets, volumes, IMDS,
user data, tags...) must be identical.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from longshore.config import load_cluster, load_cluster_text
from longshore.core.model import Expiry
from tests.config.convert import convert_documents, semantic_view
from tests.conftest import VALID_MANIFESTS

HERE = Path(__file__).resolve().parent / "fixtures"
SEED_06 = VALID_MANIFESTS / "06-workernode-al2.yaml"


def test_seed_06_written_by_hand_as_v1_gives_the_same_model() -> None:
    v1alpha5 = load_cluster([SEED_06])
    v1 = load_cluster([HERE / "06-workernode-al2-v1.yaml"])
    assert semantic_view(v1alpha5) == semantic_view(v1)


def test_seed_06_written_by_hand_as_v1beta1_gives_the_same_model() -> None:
    v1alpha5 = load_cluster([SEED_06])
    v1beta1 = load_cluster([HERE / "06-workernode-al2-v1beta1.yaml"])
    assert semantic_view(v1alpha5) == semantic_view(v1beta1)


def test_the_intended_differences_are_really_there() -> None:
    pool_v1alpha5 = load_cluster([SEED_06]).pool("default")
    pool_v1 = load_cluster([HERE / "06-workernode-al2-v1.yaml"]).pool("default")
    assert pool_v1alpha5.expiry == Expiry(None, forceful=False)
    assert pool_v1.expiry == Expiry(None, forceful=True)
    assert (pool_v1alpha5.origin.dialect, pool_v1.origin.dialect) == ("v1alpha5", "v1")
    # and a real difference is not hidden by the view: v1's default hop limit is 1, not 2
    text = (
        (HERE / "06-workernode-al2-v1.yaml")
        .read_text()
        .replace("  metadataOptions:\n    httpPutResponseHopLimit: 2\n", "")
    )
    assert semantic_view(load_cluster_text(text, "no-hop-limit.yaml")) != semantic_view(
        load_cluster([SEED_06])
    )


def _seed_with_default_profile(path: Path, tmp_path: Path) -> list[Path]:
    """The seed plus a Cluster document giving v1alpha5's global default instance profile."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "apiVersion: longshore.io/v1alpha1\nkind: Cluster\nmetadata: {name: demo}\n"
        "spec:\n  settings:\n    defaultInstanceProfile: DefaultInstanceProfile\n"
    )
    return [cluster, path]


@pytest.mark.parametrize("path", sorted(VALID_MANIFESTS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_seed_converted_to_v1_gives_the_same_model(path: Path, tmp_path: Path) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    converted = tmp_path / "converted.yaml"
    converted.write_text(yaml.safe_dump_all(convert_documents(documents), sort_keys=False))
    original = load_cluster(_seed_with_default_profile(path, tmp_path))
    assert semantic_view(original) == semantic_view(load_cluster([tmp_path / "cluster.yaml", converted]))


# --- property: random Provisioners ------------------------------------------------------------------------

_KEYS = ["karpenter.k8s.aws/instance-category", "kubernetes.io/arch", "karpenter.sh/capacity-type", "team"]
_NUMERIC = ["karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-cpu"]
_WORDS = st.sampled_from(["a", "b", "c", "m", "amd64", "spot", "on-demand", "x1"])


def _known_values_ok(item: dict[str, object]) -> bool:
    """Karpenter rejects `capacity-type In` naming no real capacity type; such pools are not generated."""
    values = set(item["values"])  # type: ignore[call-overload]
    return (
        item["key"] != "karpenter.sh/capacity-type"
        or item["operator"] != "In"
        or bool(values & {"spot", "on-demand"})
    )


requirement = st.one_of(
    st.builds(
        lambda key, op, values: {"key": key, "operator": op, "values": sorted(set(values))},
        st.sampled_from(_KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(_WORDS, min_size=1, max_size=3),
    ).filter(_known_values_ok),
    st.builds(
        lambda key, op: {"key": key, "operator": op},
        st.sampled_from(_KEYS),
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
    st.builds(
        lambda key, op, n: {"key": key, "operator": op, "values": [str(n)]},
        st.sampled_from(_NUMERIC),
        st.sampled_from(["Gt", "Lt"]),
        st.integers(0, 64),
    ),
)
taint = st.builds(
    lambda key, value, effect: {"key": key, "value": value, "effect": effect},
    st.sampled_from(["dedicated", "example.com/gpu"]),
    st.sampled_from(["", "true", "batch"]),
    st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
)
emptiness = st.sampled_from(["none", "ttl", "consolidation"])


@st.composite
def provisioner(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"providerRef": {"name": "default"}}
    if draw(st.booleans()):
        spec["requirements"] = draw(st.lists(requirement, max_size=4))
    if draw(st.booleans()):
        spec["labels"] = draw(
            st.dictionaries(st.sampled_from(["team", "example.com/tier"]), _WORDS, max_size=2)
        )
    if draw(st.booleans()):
        spec["taints"] = draw(st.lists(taint, max_size=2, unique_by=lambda t: (t["key"], t["effect"])))
    if draw(st.booleans()):
        spec["weight"] = draw(st.integers(1, 100))
    if draw(st.booleans()):
        spec["limits"] = {
            "resources": {"cpu": draw(st.integers(1, 5000)), "memory": f"{draw(st.integers(1, 999))}Gi"}
        }
    if draw(st.booleans()):
        spec["ttlSecondsUntilExpired"] = draw(st.integers(0, 10**7))
    mode = draw(emptiness)
    if mode == "ttl":
        spec["ttlSecondsAfterEmpty"] = draw(st.integers(0, 86400))
    elif mode == "consolidation":
        spec["consolidation"] = {"enabled": True}
    if draw(st.booleans()):
        spec["kubeletConfiguration"] = {"maxPods": draw(st.integers(1, 250))}
    return {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "pool"},
        "spec": spec,
    }


TEMPLATE = {
    "apiVersion": "karpenter.k8s.aws/v1alpha1",
    "kind": "AWSNodeTemplate",
    "metadata": {"name": "default"},
    "spec": {
        "subnetSelector": {"karpenter.sh/discovery": "demo"},
        "securityGroupSelector": {"karpenter.sh/discovery": "demo"},
        "instanceProfile": "NodeProfile",
    },
}


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(provisioner())
def test_any_provisioner_and_its_v1_conversion_normalise_alike(document: dict[str, Any]) -> None:
    v1alpha5 = load_cluster_text(yaml.safe_dump_all([document, TEMPLATE]), "v1alpha5.yaml")
    v1 = load_cluster_text(yaml.safe_dump_all(convert_documents([document, TEMPLATE])), "v1.yaml")
    assert semantic_view(v1alpha5) == semantic_view(v1)
    assert dataclasses.replace(v1alpha5.node_pools[0].expiry, forceful=True) == v1.node_pools[0].expiry
