"""User data per AMI family: golden files, merging with the node class's own user data, and reading it back.

Matrix: AL2 / AL2023 / Bottlerocket / Custom x (no custom user data, custom user data of each accepted shape);
`parse_bootstrap` on each family's output returns exactly what was rendered (text and base64), and on the node
class's own settings merged underneath ours, ours win. Set UPDATE_GOLDEN=1 to rewrite the golden files after
an intended change, then review the diff.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
import yaml

from longshore.adapters.aws.userdata import Bootstrap, ClusterInfo, UserDataError, parse_bootstrap
from longshore.adapters.aws.userdata_render import encode_user_data, render_user_data
from longshore.core.model import KubeletConfig, Taint

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "userdata"

CLUSTER = ClusterInfo(
    name="demo-cluster",
    endpoint="https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    ca_data="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    version="1.30",
    service_cidr="10.100.0.0/16",
)
BOOTSTRAP = Bootstrap(
    labels=(
        ("karpenter.k8s.aws/ec2nodeclass", "default"),
        ("karpenter.sh/capacity-type", "spot"),
        ("karpenter.sh/do-not-sync-taints", "true"),
        ("karpenter.sh/nodepool", "default"),
        ("team", "web"),
    ),
    taints=(
        Taint("dedicated", "NoSchedule", "web"),
        Taint("example.com/agent-not-ready", "NoSchedule"),
        Taint("karpenter.sh/unregistered", "NoExecute"),
    ),
    max_pods=29,
    kube_reserved=(("cpu", "70m"), ("ephemeral-storage", "1Gi"), ("memory", "574Mi")),
    system_reserved=(("cpu", "100m"), ("memory", "100Mi")),
    eviction_hard=(("memory.available", "100Mi"), ("nodefs.available", "10%")),
)
KUBELET = KubeletConfig(image_gc_high_threshold_percent=85, image_gc_low_threshold_percent=80)

AL2_CUSTOM = "#!/bin/bash\necho 'hello from the node class'\n"
AL2023_CUSTOM = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo 'user script'
--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 7
      shutdownGracePeriod: 30s
--BOUNDARY--
"""
BOTTLEROCKET_CUSTOM = """[settings.kubernetes]
max-pods = 7
kube-api-qps = 30

[settings.kubernetes.node-labels]
"custom/label" = "kept"

[settings.host-containers.admin]
enabled = true
"""

CASES = {
    "al2": ("AL2", None),
    "al2-custom": ("AL2", AL2_CUSTOM),
    "al2023": ("AL2023", None),
    "al2023-custom": ("AL2023", AL2023_CUSTOM),
    "bottlerocket": ("Bottlerocket", None),
    "bottlerocket-custom": ("Bottlerocket", BOTTLEROCKET_CUSTOM),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_user_data_matches_golden_file(case: str) -> None:
    family, custom = CASES[case]
    rendered = render_user_data(family, CLUSTER, BOOTSTRAP, KUBELET, custom)  # type: ignore[arg-type]
    path = GOLDEN / f"{case}.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(rendered)
    assert rendered == path.read_text(), (
        f"{path} differs; rerun with UPDATE_GOLDEN=1 if the change is intended"
    )


@pytest.mark.parametrize("case", ["al2", "al2023", "bottlerocket"])
@pytest.mark.parametrize("encode", [False, True], ids=["text", "base64"])
def test_parse_bootstrap_reads_back_what_was_rendered(case: str, encode: bool) -> None:
    family, custom = CASES[case]
    rendered = render_user_data(family, CLUSTER, BOOTSTRAP, KUBELET, custom)  # type: ignore[arg-type]
    assert parse_bootstrap(encode_user_data(rendered) if encode else rendered) == BOOTSTRAP


@pytest.mark.parametrize("case", ["al2-custom", "al2023-custom", "bottlerocket-custom"])
def test_our_settings_win_over_the_node_class_user_data(case: str) -> None:
    family, custom = CASES[case]
    parsed = parse_bootstrap(render_user_data(family, CLUSTER, BOOTSTRAP, KUBELET, custom))  # type: ignore[arg-type]
    assert parsed.max_pods == 29
    assert parsed.taints == BOOTSTRAP.taints
    assert ("karpenter.sh/nodepool", "default") in parsed.labels


def test_al2023_keeps_the_node_class_parts_before_ours() -> None:
    rendered = render_user_data("AL2023", CLUSTER, BOOTSTRAP, KUBELET, AL2023_CUSTOM)
    assert (
        rendered.index("echo 'user script'")
        < rendered.index("shutdownGracePeriod")
        < rendered.index("maxPods: 29")
    )


def test_al2023_bare_nodeconfig_is_wrapped_as_a_nodeconfig_part() -> None:
    bare = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 3\n"
    rendered = render_user_data("AL2023", CLUSTER, BOOTSTRAP, KUBELET, bare)
    assert rendered.count("Content-Type: application/node.eks.aws") == 2
    assert parse_bootstrap(rendered).max_pods == 29


def test_al2023_passes_extra_kubelet_fields_through() -> None:
    kubelet = KubeletConfig(extra=(("shutdownGracePeriod", '"45s"'), ("registryPullQPS", "10")))
    rendered = render_user_data("AL2023", CLUSTER, BOOTSTRAP, kubelet)
    node_config = yaml.safe_load(
        rendered.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("--//--")[0]
    )
    config = node_config["spec"]["kubelet"]["config"]
    assert config["shutdownGracePeriod"] == "45s" and config["registryPullQPS"] == 10
    assert config["clusterDNS"] == ["10.100.0.10"]


def test_bottlerocket_keeps_user_settings_it_does_not_own() -> None:
    doc = tomllib.loads(render_user_data("Bottlerocket", CLUSTER, BOOTSTRAP, KUBELET, BOTTLEROCKET_CUSTOM))
    kubernetes = doc["settings"]["kubernetes"]
    assert kubernetes["kube-api-qps"] == 30
    assert kubernetes["node-labels"]["custom/label"] == "kept"
    assert kubernetes["max-pods"] == 29
    assert doc["settings"]["host-containers"]["admin"]["enabled"] is True


def test_bottlerocket_rejects_invalid_toml_with_a_clear_error() -> None:
    with pytest.raises(UserDataError, match=r"Bottlerocket.*not valid TOML"):
        render_user_data("Bottlerocket", CLUSTER, BOOTSTRAP, KUBELET, "[settings\nbroken")


def test_custom_family_passes_user_data_through_unchanged() -> None:
    assert render_user_data("Custom", CLUSTER, BOOTSTRAP, KUBELET, AL2_CUSTOM) == AL2_CUSTOM
    assert parse_bootstrap(AL2_CUSTOM) == Bootstrap()


def test_unsupported_family_is_named_in_the_error() -> None:
    with pytest.raises(UserDataError, match="Plan9"):
        render_user_data("Plan9", CLUSTER, BOOTSTRAP)  # type: ignore[arg-type]


@pytest.mark.parametrize("family", ["Windows2019", "Windows2022", "Windows2025"])
def test_windows_user_data_calls_the_eks_bootstrap_script_and_round_trips(family: str) -> None:
    # Karpenter `pkg/providers/amifamily/bootstrap/windows.go`: one <powershell> block, the node class's own
    # PowerShell first, then Start-EKSBootstrap.ps1 with the kubelet flags in -KubeletExtraArgs
    rendered = render_user_data(family, CLUSTER, BOOTSTRAP, KUBELET, "<powershell>Write-Host hi</powershell>")
    assert rendered.startswith("<powershell>\nWrite-Host hi\n")
    assert "Start-EKSBootstrap.ps1" in rendered and f"-EKSClusterName '{CLUSTER.name}'" in rendered
    parsed = parse_bootstrap(rendered)
    assert parsed.labels == BOOTSTRAP.labels and parsed.taints == BOOTSTRAP.taints
    assert parsed.max_pods == BOOTSTRAP.max_pods


def test_taint_with_a_value_and_one_without_round_trip_in_al2_flags() -> None:
    rendered = render_user_data("AL2", CLUSTER, BOOTSTRAP)
    assert (
        '--register-with-taints="dedicated=web:NoSchedule,example.com/agent-not-ready=:NoSchedule,'
        in rendered
    )
    assert parse_bootstrap(rendered).taints == BOOTSTRAP.taints


def test_dns_ip_is_the_tenth_address_of_the_service_cidr() -> None:
    assert ClusterInfo("c", "https://x", "", "1.30", service_cidr="172.20.0.0/16").dns_ip == "172.20.0.10"
