"""Dialect details: how each kind's fields map to the model, and the rules that differ between versions."""

from __future__ import annotations

import pytest

from longshore.config import ConfigErrors, load_cluster_text
from longshore.core.model import BlockDevice, Budget, Expiry, NetworkInterface, SelectorTerm

PROVISIONER_INLINE = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: legacy}
spec:
  annotations: {example.com/owner: team-a}
  startupTaints: [{key: example.com/agent, effect: NoExecute}]
  provider:
    subnetSelector: {aws-ids: "subnet-1, subnet-2"}
    securityGroupSelector: {Name: "eks-*"}
    instanceProfile: NodeProfile
    amiFamily: Ubuntu
    launchTemplate: null
"""

TEMPLATE_AMI_SELECTOR = """
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: custom}
spec:
  providerRef: {name: custom}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: custom}
spec:
  subnetSelector: {karpenter.sh/discovery: demo}
  securityGroupSelector: {karpenter.sh/discovery: demo}
  amiFamily: Custom
  amiSelector: {aws::name: "my-ami-*", aws::owners: "self,123456789012", team: a}
  context: arn:aws:ec2:us-east-1:1:context
"""

V1BETA1 = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: beta}
spec:
  template:
    spec:
      nodeClassRef: {name: beta}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: Exists, minValues: 3}
      kubelet: {maxPods: 30}
  disruption:
    consolidationPolicy: WhenUnderutilized
    budgets: [{nodes: "20%"}]
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: beta}
spec:
  amiFamily: AL2023
  role: NodeRole
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{name: my-sg}]
"""

V1_CLASS_EXTRAS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static, labels: {ignored: "yes"}, uid: abc, resourceVersion: "7"}
spec:
  replicas: 3
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: full}
      terminationGracePeriod: 1h
      expireAfter: 24h
status: {nodes: 3}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: full}
spec:
  amiFamily: Custom
  amiSelectorTerms: [{ssmParameter: /my/ami}]
  instanceProfile: Profile
  subnetSelectorTerms: [{tags: {Name: private}}]
  securityGroupSelectorTerms: [{id: sg-1}]
  capacityReservationSelectorTerms: [{id: cr-1}, {tags: {team: a}, ownerID: "123456789012"}]
  placementGroupSelector: {name: my-pg}
  networkInterfaces:
    - {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}
    - {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}
  ipPrefixCount: 2
  associatePublicIPAddress: false
  instanceStorePolicy: RAID0
  blockDeviceMappings:
    - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 1Ti, volumeType: gp3, snapshotID: snap-1, volumeInitializationRate: 200}}
"""


def test_inline_provider_becomes_a_class_named_after_the_provisioner() -> None:
    config = load_cluster_text(PROVISIONER_INLINE, "legacy.yaml")
    pool = config.pool("legacy")
    node_class = config.node_class_of(pool)
    assert node_class.name == "legacy" and node_class.origin.kind == "Provisioner"
    assert node_class.subnet_selector_terms == (SelectorTerm(id="subnet-1"), SelectorTerm(id="subnet-2"))
    assert node_class.security_group_selector_terms == (SelectorTerm(tags=(("Name", "eks-*"),)),)
    assert node_class.ami_family == "Ubuntu" and node_class.ami_selector_terms == ()
    assert node_class.block_device_mappings == (
        BlockDevice("/dev/sda1", volume_size_gib=20, volume_type="gp3", encrypted=True, root_volume=True),
    )
    assert dict(pool.annotations) == {"example.com/owner": "team-a"}
    assert pool.startup_taints[0].effect == "NoExecute"
    assert pool.disruption.consolidate_after_seconds is None  # nothing removes empty nodes


def test_v1alpha5_ami_selector_maps_to_one_term_per_owner() -> None:
    node_class = load_cluster_text(TEMPLATE_AMI_SELECTOR, "x").node_classes[0]
    assert node_class.ami_selector_terms == (
        SelectorTerm(tags=(("team", "a"),), name="my-ami-*", owner="self"),
        SelectorTerm(tags=(("team", "a"),), name="my-ami-*", owner="123456789012"),
    )
    assert node_class.block_device_mappings == ()  # Custom AMIs keep their own volumes
    assert node_class.context == "arn:aws:ec2:us-east-1:1:context"


def test_custom_family_needs_an_ami_selector() -> None:
    text = TEMPLATE_AMI_SELECTOR.replace(
        '  amiSelector: {aws::name: "my-ami-*", aws::owners: "self,123456789012", team: a}\n', ""
    )
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(text, "x")
    assert caught.value.errors[0].path == "spec.amiSelector"


def test_v1beta1_semantics() -> None:
    config = load_cluster_text(V1BETA1, "beta.yaml")
    pool = config.pool("beta")
    assert pool.origin.dialect == "v1beta1"
    assert (pool.disruption.consolidation_policy, pool.disruption.consolidate_after_seconds) == (
        "WhenEmptyOrUnderutilized",
        0,
    )
    assert pool.expiry == Expiry(720 * 3600, forceful=False)
    assert pool.disruption.budgets == (Budget("20%"),)
    assert pool.kubelet is not None and pool.kubelet.max_pods == 30
    assert pool.requirements[0].min_values == 3
    node_class = config.node_class_of(pool)
    assert node_class.ami_selector_terms == (SelectorTerm(alias="al2023@latest"),)
    assert node_class.metadata_options.http_put_response_hop_limit == 2


def test_v1beta1_rejects_consolidate_after_with_when_underutilized() -> None:
    text = V1BETA1.replace(
        "consolidationPolicy: WhenUnderutilized",
        "consolidationPolicy: WhenUnderutilized\n    consolidateAfter: 30s",
    )
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(text, "x")
    (error,) = caught.value.errors
    assert error.path == "spec.disruption.consolidateAfter" and "WhenUnderutilized" in error.message


def test_v1beta1_policy_name_in_v1_gets_a_hint() -> None:
    text = V1_CLASS_EXTRAS.replace(
        "  replicas: 3\n", "  disruption: {consolidationPolicy: WhenUnderutilized}\n"
    )
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(text, "x")
    assert "v1 calls it WhenEmptyOrUnderutilized" in caught.value.errors[0].message


def test_v1_static_pool_and_every_node_class_field_is_kept() -> None:
    config = load_cluster_text(V1_CLASS_EXTRAS, "full.yaml")
    pool = config.pool("static")
    assert pool.replicas == 3 and pool.termination_grace_period_seconds == 3600
    assert pool.expiry == Expiry(24 * 3600, forceful=True)
    node_class = config.node_class_of(pool)
    assert node_class.ami_selector_terms == (SelectorTerm(ssm_parameter="/my/ami"),)
    assert node_class.capacity_reservation_selector_terms == (
        SelectorTerm(id="cr-1"),
        SelectorTerm(tags=(("team", "a"),), owner="123456789012"),
    )
    assert node_class.placement_group == SelectorTerm(name="my-pg")
    assert node_class.network_interfaces == (
        NetworkInterface(1, 0, "efa-only"),
        NetworkInterface(0, 0, "interface"),
    )
    assert (node_class.ip_prefix_count, node_class.associate_public_ip_address) == (2, False)
    assert node_class.instance_store_policy == "RAID0"
    assert node_class.block_device_mappings == (
        BlockDevice(
            "/dev/xvda",
            volume_size_gib=1024,
            volume_type="gp3",
            snapshot_id="snap-1",
            root_volume=True,
            volume_initialization_rate=200,
        ),
    )


def test_kubectl_output_fields_are_accepted() -> None:
    # metadata.uid/resourceVersion and status come from `kubectl get -o yaml`; they are ignored
    assert load_cluster_text(V1_CLASS_EXTRAS, "x").pool("static").labels == ()


@pytest.mark.parametrize(
    ("before", "after", "path", "words"),
    [
        (
            "volumeSize: 1Ti",
            "volumeSize: 50",
            "spec.blockDeviceMappings[0].ebs.volumeSize",
            "with a unit Gi, G, Ti or T",
        ),
        (
            "interfaceType: efa-only",
            "interfaceType: fast",
            "spec.networkInterfaces[0].interfaceType",
            "not one of",
        ),
        ("amiFamily: Custom", "amiFamily: Ubuntu", "spec.amiFamily", "'Ubuntu' is not one of"),
        (
            "instanceStorePolicy: RAID0",
            "instanceStorePolicy: RAID1",
            "spec.instanceStorePolicy",
            "only policy is RAID0",
        ),
        ("expireAfter: 24h", "expireAfter: 1d", "spec.template.spec.expireAfter", "is not a duration"),
        ("replicas: 3", "replicas: 3\n  weight: 5", "spec.weight", "static NodePool"),
        ("name: my-pg}", "name: my-pg, id: pg-1}", "spec.placementGroupSelector", "exactly one of name, id"),
    ],
)
def test_v1_rules(before: str, after: str, path: str, words: str) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(V1_CLASS_EXTRAS.replace(before, after), "x")
    error = next((e for e in caught.value.errors if e.path == path), None)
    assert error is not None, str(caught.value)
    assert words in error.message


def test_v1_node_class_without_alias_needs_an_ami_family() -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(V1_CLASS_EXTRAS.replace("  amiFamily: Custom\n", ""), "x")
    assert caught.value.errors[0].message == "amiFamily is required when amiSelectorTerms has no alias term"


def test_restricted_tags_are_refused() -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(
            V1_CLASS_EXTRAS.replace("  ipPrefixCount: 2\n", "  tags: {karpenter.sh/nodepool: x}\n"), "x"
        )
    assert caught.value.errors[0].path == "spec.tags.karpenter.sh/nodepool"


@pytest.mark.parametrize(
    ("text", "pool_name", "limits"),
    [
        (PROVISIONER_INLINE, "legacy", "  limits: {resources: {cpu: '0', memory: 10Gi}}\n"),
        (V1BETA1.split("---")[0], "beta", "  limits: {cpu: '0', memory: 10Gi}\n"),
        (V1_CLASS_EXTRAS.split("---")[0].replace("  replicas: 3\n", ""), "static", "  limits: {cpu: 0}\n"),
    ],
    ids=["v1alpha5", "v1beta1", "v1"],
)
def test_a_limit_of_zero_is_kept(text: str, pool_name: str, limits: str) -> None:
    # `limits: {cpu: "0"}` is a frozen pool, not "no cpu limit" (Karpenter skips a pool at its limits)
    documents = text.replace("spec:\n", "spec:\n" + limits, 1)
    if pool_name != "legacy":
        documents += "---\n" + (V1BETA1 if pool_name == "beta" else V1_CLASS_EXTRAS).split("---")[1]
    pool = load_cluster_text(documents, "x.yaml").pool(pool_name)
    assert "cpu" in pool.limits and pool.limits.amount("cpu") == 0
    assert pool.limits and "nodes" not in pool.limits
