"""Every shared seed manifest: the valid ones load into the expected model, the invalid ones fail as described."""

from __future__ import annotations

from pathlib import Path

import pytest

from longshore.config import ConfigErrors, load_cluster
from longshore.core.model import BlockDevice, Budget, MetadataOptions, Requirement, SelectorTerm
from longshore.core.resources import Limits
from tests.conftest import INVALID_MANIFESTS, VALID_MANIFESTS, VALID_V1_MANIFESTS

VALID = sorted(VALID_MANIFESTS.glob("*.yaml")) + sorted(VALID_V1_MANIFESTS.glob("*.yaml"))
INVALID = sorted(INVALID_MANIFESTS.glob("*.yaml"))


def test_the_karpenter_fixtures_are_there() -> None:
    assert len(VALID) >= 10
    assert len(INVALID) >= 5


@pytest.mark.parametrize("path", VALID, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_valid_fixture_loads_and_every_pool_finds_its_class(path: Path) -> None:
    config = load_cluster([path], cluster_name="demo-cluster")
    assert config.node_pools
    for pool in config.node_pools:
        assert config.node_class_of(pool).name == pool.node_class
        assert pool.origin.file == str(path)


# Each invalid fixture's header comment says what the error must say; these are those words.
EXPECTED: dict[str, list[tuple[str | None, str]]] = {
    "01-label-typo.yaml": [("spec.label", "unknown field 'label'"), ("spec.label", "did you mean 'labels'")],
    "02-broken-requirement-key.yaml": [(None, "invalid YAML"), (None, "mapping values are not allowed here")],
    "03-restricted-label-domain.yaml": [("spec.requirements[1].key", "restricted domain 'karpenter.sh'")],
    "04-empty-ttl-with-consolidation.yaml": [
        (
            "spec.ttlSecondsAfterEmpty",
            "consolidation.enabled and ttlSecondsAfterEmpty cannot be used together",
        )
    ],
    "05-missing-node-template.yaml": [("spec.providerRef.name", "AWSNodeTemplate 'does-not-exist'")],
}
EXPECTED_LINES = {
    "01-label-typo.yaml": 10,
    "02-broken-requirement-key.yaml": 9,
    "03-restricted-label-domain.yaml": 13,
    "04-empty-ttl-with-consolidation.yaml": 10,
    "05-missing-node-template.yaml": 9,
}


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_every_invalid_fixture_fails_with_the_described_error(path: Path) -> None:
    assert path.name in EXPECTED, f"add the expected message of {path.name} (see its header comment)"
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([path])
    errors = caught.value.errors
    for field_path, words in EXPECTED[path.name]:
        matching = [e for e in errors if words in e.message and e.path == field_path]
        assert matching, f"no error at {field_path} saying {words!r} in:\n{caught.value}"
        error = matching[0]
        assert error.file == str(path)
        assert error.line == EXPECTED_LINES[path.name]
        assert str(error).startswith(f"{path}:{EXPECTED_LINES[path.name]}: ")


def test_the_yaml_error_loads_nothing_and_names_file_and_line() -> None:
    path = INVALID_MANIFESTS / "02-broken-requirement-key.yaml"
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([path, VALID_MANIFESTS / "02-spot-limits.yaml"])
    assert [str(e).split(": ")[0] for e in caught.value.errors] == [f"{path}:9"]


def test_requirements_ttl_empty_normalises_to_when_empty_after_60s() -> None:
    config = load_cluster([VALID_MANIFESTS / "01-requirements-ttl-empty.yaml"])
    pool = config.pool("default")
    assert pool.disruption.consolidation_policy == "WhenEmpty"
    assert pool.disruption.consolidate_after_seconds == 60
    assert pool.disruption.budgets == (Budget(nodes="100%"),), "v1alpha5 had no budgets"
    assert pool.expiry.after_seconds is None and pool.expiry.forceful is False
    assert pool.requirements[2] == Requirement("karpenter.k8s.aws/instance-generation", "In", ("3", "5"))
    node_class = config.node_class_of(pool)
    assert node_class.ami_family == "AL2"
    assert node_class.ami_selector_terms == (SelectorTerm(alias="al2@latest"),)
    assert node_class.subnet_selector_terms == (
        SelectorTerm(tags=(("karpenter.sh/discovery", "demo-cluster"),)),
    )
    assert node_class.metadata_options == MetadataOptions(http_put_response_hop_limit=2)
    assert node_class.block_device_mappings == (
        BlockDevice("/dev/xvda", volume_size_gib=20, volume_type="gp3", encrypted=True, root_volume=True),
    )


def test_limits_and_kubelet_are_kept() -> None:
    limits = load_cluster([VALID_MANIFESTS / "02-spot-limits.yaml"]).pool("default").limits
    assert limits == Limits.of({"cpu": 1_000_000, "memory": 1000 * 2**30, "nvidia.com/gpu": 2})
    kubelet = load_cluster([VALID_MANIFESTS / "03-kubelet-configuration.yaml"]).pool("default").kubelet
    assert kubelet is not None
    assert kubelet.max_pods == 20 and kubelet.pods_per_core == 2
    assert kubelet.cluster_dns == ("10.0.1.100",) and kubelet.container_runtime == "containerd"
    assert dict(kubelet.kube_reserved) == {"cpu": "200m", "memory": "100Mi", "ephemeral-storage": "3Gi"}
    assert dict(kubelet.eviction_soft_grace_period)["nodefs.available"] == "1m30s"
    assert (kubelet.image_gc_high_threshold_percent, kubelet.image_gc_low_threshold_percent) == (85, 80)
    assert kubelet.cpu_cfs_quota is True and kubelet.eviction_max_pod_grace_period == 60


def test_weights_order_pools_and_taints_are_kept() -> None:
    config = load_cluster([VALID_MANIFESTS / "04-weighted-savings-plan.yaml"])
    assert [p.name for p in config.pools_by_weight()] == ["savings-plan-instance", "default"]
    gpu = load_cluster([VALID_MANIFESTS / "05-gpu-tainted.yaml"]).pool("gpu")
    assert [(t.key, t.value, t.effect) for t in gpu.taints] == [("nvidia.com/gpu", "true", "NoSchedule")]


def test_zonal_expiring_pool_is_graceful_thirty_days_with_consolidation_off() -> None:
    config = load_cluster([VALID_MANIFESTS / "08-c6i-zonal-expiring.yaml"])
    pool = config.pool("c6i-workers")
    assert pool.expiry.after_seconds == 30 * 24 * 3600 and pool.expiry.forceful is False
    assert (pool.disruption.consolidation_policy, pool.disruption.consolidate_after_seconds) == (
        "WhenEmpty",
        30,
    )
    (device,) = config.node_class_of(pool).block_device_mappings
    assert (device.volume_size_gib, device.iops, device.throughput, device.delete_on_termination) == (
        50,
        10000,
        125,
        True,
    )


def test_consolidation_and_bottlerocket_defaults() -> None:
    config = load_cluster([VALID_MANIFESTS / "09-consolidation-drift.yaml"])
    pool = config.pool("default")
    assert (pool.disruption.consolidation_policy, pool.disruption.consolidate_after_seconds) == (
        "WhenEmptyOrUnderutilized",
        0,
    )
    node_class = config.node_class_of(pool)
    assert node_class.ami_family == "Bottlerocket" and node_class.detailed_monitoring is True
    assert [d.device_name for d in node_class.block_device_mappings] == ["/dev/xvda", "/dev/xvdb"]
    assert node_class.metadata_options.http_put_response_hop_limit == 2


def test_v1_pool_gets_v1_defaults_and_kubelet_on_the_class() -> None:
    config = load_cluster([VALID_V1_MANIFESTS / "01-default-al2023.yaml"])
    pool = config.pool("general")
    assert pool.expiry.after_seconds == 720 * 3600 and pool.expiry.forceful is True
    assert pool.disruption.consolidate_after_seconds == 60
    assert pool.disruption.budgets[1] == Budget(
        "0", "0 9 * * mon-fri", 8 * 3600, ("Drifted", "Underutilized")
    )
    assert pool.kubelet is None
    node_class = config.node_class_of(pool)
    assert node_class.ami_family == "AL2023" and node_class.role == "KarpenterNodeRole-demo-cluster"
    assert node_class.metadata_options.http_put_response_hop_limit == 1
    assert pool.effective_kubelet(node_class).max_pods == 58
