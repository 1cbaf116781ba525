"""v1 pools may carry kubernetes.io / k8s.io labels (Karpenter 1.9+); the kubelet must not be asked to set the
ones it refuses, or the node never starts. Regression test for the validation change that allowed them."""

from __future__ import annotations

from longshore.adapters.aws.fleet import node_bootstrap
from longshore.core.claims import KubeletSettings, LaunchOption
from longshore.core.labels import kubelet_may_set
from tests.builders import node_class, pool


def test_bootstrap_keeps_only_labels_the_kubelet_accepts() -> None:
    labelled = pool(
        labels={
            "kubernetes.io/team": "a",
            "k8s.io/team": "b",
            "node-restriction.kubernetes.io/tier": "c",
            "node.kubernetes.io/role": "web",
            "example.com/team": "d",
        }
    )
    option = LaunchOption("m5.large", "us-east-1a", "on-demand", 0.1, kubelet=KubeletSettings())
    labels = dict(node_bootstrap(labelled, node_class(), option, "AL2023").labels)
    assert labels["node.kubernetes.io/role"] == "web" and labels["example.com/team"] == "d"
    assert not {"kubernetes.io/team", "k8s.io/team", "node-restriction.kubernetes.io/tier"} & set(labels)


def test_kubelet_label_rule() -> None:
    allowed = (
        "kubernetes.io/arch",
        "topology.kubernetes.io/zone",
        "kubelet.kubernetes.io/x",
        "a.node.kubernetes.io/y",
    )
    refused = ("kubernetes.io/team", "x.k8s.io/y", "node-restriction.kubernetes.io/z")
    assert all(kubelet_may_set(key) for key in (*allowed, "example.com/team", "team"))
    assert not any(kubelet_may_set(key) for key in refused)
