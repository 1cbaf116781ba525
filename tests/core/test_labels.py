"""Well-known labels, beta aliases and the label domains a pool may not use (Karpenter `labels.go`)."""

from __future__ import annotations

import pytest

from longshore.core import labels as wk


@pytest.mark.parametrize(
    ("beta", "stable"),
    [
        ("failure-domain.beta.kubernetes.io/zone", wk.ZONE),
        ("failure-domain.beta.kubernetes.io/region", wk.REGION),
        ("beta.kubernetes.io/arch", wk.ARCH),
        ("beta.kubernetes.io/os", wk.OS),
        ("beta.kubernetes.io/instance-type", wk.INSTANCE_TYPE),
        ("team", "team"),
    ],
)
def test_normalize_key(beta: str, stable: str) -> None:
    assert wk.normalize_key(beta) == stable


@pytest.mark.parametrize(
    "key",
    [
        wk.ZONE,
        wk.CAPACITY_TYPE,
        wk.NODEPOOL,
        wk.INSTANCE_CATEGORY,
        wk.INSTANCE_GPU_NAME,
        wk.ZONE_ID,
        "beta.kubernetes.io/arch",
        "capacity-spread",
        "example.com/team",
        "node.kubernetes.io/lifecycle",  # node.kubernetes.io is an exempt sub-domain
        "node-restriction.kubernetes.io/pool",
        "kops.k8s.io/instancegroup",
    ],
)
def test_allowed_keys(key: str) -> None:
    assert wk.restricted_reason(key) is None


@pytest.mark.parametrize(
    ("key", "domain"),
    [
        ("karpenter.sh/capacity-spread", "karpenter.sh"),
        ("karpenter.k8s.aws/made-up", "karpenter.k8s.aws"),
        ("kubernetes.io/team", "kubernetes.io"),
        ("foo.kubernetes.io/bar", "kubernetes.io"),
        ("k8s.io/x", "k8s.io"),
        ("sub.k8s.io/x", "k8s.io"),
    ],
)
def test_restricted_domains_name_the_domain(key: str, domain: str) -> None:
    reason = wk.restricted_reason(key)
    assert reason is not None
    assert key in reason and f"restricted domain {domain!r}" in reason


def test_hostname_is_restricted() -> None:
    reason = wk.restricted_reason(wk.HOSTNAME)
    assert reason is not None and "kubernetes.io/hostname" in reason


def test_domain_match_is_a_plain_suffix_like_karpenter() -> None:
    # Karpenter uses strings.HasSuffix, so "notkubernetes.io" is treated as restricted too.
    assert wk.restricted_reason("notkubernetes.io/x") is not None
    assert wk.domain_of("karpenter.sh/nodepool") == "karpenter.sh"
    assert wk.domain_of("team") == ""


def test_the_ebs_csi_zone_key_means_the_zone() -> None:
    # aws/karpenter-provider-aws adds it to Karpenter's NormalizedLabels: EBS volumes' node affinity uses it
    assert wk.normalize_key("topology.ebs.csi.aws.com/zone") == wk.ZONE
