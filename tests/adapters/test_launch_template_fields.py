"""EC2NodeClass fields that shape the launch template: `networkInterfaces` (EFA-only), the EFA interfaces of a
claim requesting `vpc.amazonaws.com/efa`, `ipPrefixCount`, `associatePublicIPAddress`, `connectionTracking`,
`cpuOptions`, `placementGroupSelector` (with a partition group's `PartitionNumber`) and Bottlerocket's
`instanceStorePolicy: RAID0` (Karpenter `pkg/providers/launchtemplate/launchtemplate.go`
`generateNetworkInterfaces`, `types.go` `buildPlacement`, `amifamily/bootstrap/bottlerocket.go`).

Each template is created in moto and read back with DescribeLaunchTemplateVersions; moto has no placement
groups, so `longshore_sim.placement_groups` answers DescribePlacementGroups."""

from __future__ import annotations

import base64
import tomllib
from dataclasses import replace
from typing import Any

import pytest

from longshore.adapters.aws.launch_templates import LaunchTemplates, TemplateSpec
from longshore.adapters.aws.network import Ec2PlacementGroups, SelectionError, select_placement_group
from longshore.adapters.aws.userdata import parse_bootstrap
from longshore.core import labels as wk
from longshore.core.claims import KubeletSettings, LaunchOption
from longshore.core.model import MetadataOptions, NetworkInterface, Requirement, SelectorTerm
from longshore.core.placement_groups import PlacementGroup
from longshore_sim.placement_groups import PlacementGroups
from tests.adapters.conftest import World, cluster_config, node_class, node_pool, request

NOW = 1_700_000_000.0
SGS = ("sg-1", "sg-2")
EFA_ONLY = (
    NetworkInterface(0, 0, "interface"),
    NetworkInterface(0, 1, "efa-only"),
    NetworkInterface(1, 0, "efa-only"),
)


def _spec(**fields: Any) -> TemplateSpec:
    return TemplateSpec("ami-12345678", SGS, "", (), MetadataOptions(), tags=(("team", "hpc"),), **fields)


def _read_back(world: World, spec: TemplateSpec) -> dict[str, Any]:
    name = LaunchTemplates(world.ec2, "demo-cluster").ensure(spec, NOW)
    versions = world.ec2.describe_launch_template_versions(LaunchTemplateName=name)  # type: ignore[attr-defined]
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def test_no_interface_fields_keeps_the_security_groups_on_the_instance(world: World) -> None:
    data = _read_back(world, _spec())
    assert (
        data["SecurityGroupIds"] == list(SGS) and "NetworkInterfaces" not in data and "Placement" not in data
    )


def test_node_class_interfaces_are_written_and_efa_only_ones_carry_no_addresses(world: World) -> None:
    data = _read_back(world, _spec(network_interfaces=EFA_ONLY, ip_prefix_count=2))
    assert "SecurityGroupIds" not in data, "the groups move into the interfaces"
    assert data["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "Groups": list(SGS),
            "NetworkCardIndex": 0,
            "InterfaceType": "interface",
            "Ipv4PrefixCount": 2,
        },
        {"DeviceIndex": 1, "Groups": list(SGS), "NetworkCardIndex": 0, "InterfaceType": "efa-only"},
        {"DeviceIndex": 0, "Groups": list(SGS), "NetworkCardIndex": 1, "InterfaceType": "efa-only"},
    ]


def test_a_claim_requesting_efa_gets_one_efa_interface_per_card(world: World) -> None:
    data = _read_back(world, _spec(efa_count=3))
    assert [
        (n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in data["NetworkInterfaces"]
    ] == [
        (0, 0, "efa"),
        (1, 1, "efa"),
        (2, 1, "efa"),
    ]
    assert all(n["Groups"] == list(SGS) for n in data["NetworkInterfaces"])
    # the node class's own list wins over the claim's EFA count (and the template is the same)
    assert _spec(network_interfaces=EFA_ONLY, efa_count=3).name() == _spec(network_interfaces=EFA_ONLY).name()


def test_ip_prefix_count_on_the_primary_interface_ipv4_and_ipv6(world: World) -> None:
    data = _read_back(world, _spec(ip_prefix_count=4))
    assert data["NetworkInterfaces"] == [{"DeviceIndex": 0, "Groups": list(SGS), "Ipv4PrefixCount": 4}]
    assert _read_back(world, _spec(ip_prefix_count=0))["NetworkInterfaces"][0]["Ipv4PrefixCount"] == 0
    ipv6 = _read_back(world, _spec(ip_prefix_count=1, ip_family="ipv6"))["NetworkInterfaces"]
    assert ipv6 == [
        {
            "DeviceIndex": 0,
            "Groups": list(SGS),
            "PrimaryIpv6": True,
            "Ipv6AddressCount": 1,
            "Ipv6PrefixCount": 1,
        }
    ]


def test_placement_group_and_tenancy_in_placement(world: World) -> None:
    data = _read_back(world, _spec(placement_group_id="pg-0123456789abcdef0", tenancy="dedicated"))
    assert data["Placement"] == {"GroupId": "pg-0123456789abcdef0", "Tenancy": "dedicated"}
    assert _read_back(world, _spec(placement_group_id="pg-1"))["Placement"] == {"GroupId": "pg-1"}


def test_placement_group_selector_resolves_by_name_or_id_and_names_a_missing_one(world: World) -> None:
    groups = PlacementGroups().attach(world.ec2)
    made = groups.create("training", "cluster")
    assert select_placement_group(world.ec2, SelectorTerm(name="training")).group_id == made.group_id
    by_id = select_placement_group(world.ec2, SelectorTerm(id=made.group_id), "gpu")
    assert (by_id.name, by_id.strategy) == ("training", "cluster")
    with pytest.raises(SelectionError, match=r"EC2NodeClass gpu: spec.placementGroupSelector name nope"):
        select_placement_group(world.ec2, SelectorTerm(name="nope"), "gpu")
    with pytest.raises(SelectionError, match="id pg-00000000000000009"):
        select_placement_group(world.ec2, SelectorTerm(id="pg-00000000000000009"), "gpu")


def _efa_options() -> tuple[LaunchOption, ...]:
    return (
        LaunchOption(
            "c5n.18xlarge", "us-east-1a", "on-demand", 3.888, kubelet=KubeletSettings(max_pods=737), efa=1
        ),
    )


def _template_of(world: World, name: str) -> dict[str, Any]:
    versions = world.ec2.describe_launch_template_versions(LaunchTemplateName=name)  # type: ignore[attr-defined]
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def test_a_launch_into_a_placement_group_with_efa_and_bottlerocket_raid0(world: World) -> None:
    groups = PlacementGroups().attach(world.ec2)
    group = groups.create("hpc", "cluster")
    klass = node_class(
        ami_family="Bottlerocket",
        ami_selector_terms=(SelectorTerm(alias="bottlerocket@latest"),),
        placement_group=SelectorTerm(name="hpc"),
        ip_prefix_count=1,
        instance_store_policy="RAID0",
    )
    config = replace(cluster_config(classes=(klass,)), node_pools=(node_pool(),))
    launcher = world.launcher(config)
    result = launcher.launch(request(opts=_efa_options()), NOW)
    assert result.status == "launched", result
    data = _template_of(world, str(result.claim.launch_template))  # type: ignore[union-attr]
    assert data["Placement"] == {"GroupId": group.group_id}
    assert data["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "Groups": data["NetworkInterfaces"][0]["Groups"],
            "NetworkCardIndex": 0,
            "InterfaceType": "efa",
            "Ipv4PrefixCount": 1,
        }
    ]
    text = base64.b64decode(data["UserData"]).decode()
    settings = tomllib.loads(text)["settings"]
    assert settings["bootstrap-commands"]["000-mount-instance-storage"] == {
        "commands": [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind"]],
        "mode": "always",
        "essential": True,
    }
    assert settings["kubernetes"]["node-labels"][wk.PLACEMENT_GROUP_ID] == group.group_id
    assert parse_bootstrap(data["UserData"]).instance_store_raid0
    assert launcher.launch(request(pods=("default/b",), opts=_efa_options()), NOW).status == "launched"
    assert groups.calls == 1, "resolved once per node class"


TRACKING = (("tcpEstablishedTimeout", "300"), ("udpStreamTimeout", "120"), ("udpTimeout", "45"))


def test_public_ip_and_connection_tracking_go_on_interfaces_with_addresses(world: World) -> None:
    primary = _read_back(world, _spec(associate_public_ip=False, connection_tracking=TRACKING))
    assert primary["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "Groups": list(SGS),
            "AssociatePublicIpAddress": False,
            "ConnectionTrackingSpecification": {
                "TcpEstablishedTimeout": 300,
                "UdpStreamTimeout": 120,
                "UdpTimeout": 45,
            },
        }
    ]
    listed = _read_back(
        world, _spec(network_interfaces=EFA_ONLY, associate_public_ip=True, connection_tracking=TRACKING)
    )
    interface, *efa_only = listed["NetworkInterfaces"]
    assert interface["AssociatePublicIpAddress"] is True and "ConnectionTrackingSpecification" in interface
    assert all(
        "AssociatePublicIpAddress" not in n and "ConnectionTrackingSpecification" not in n for n in efa_only
    )


def test_cpu_options_nested_virtualization(world: World) -> None:
    data = _read_back(world, _spec(cpu_options=(("nestedVirtualization", "enabled"),)))
    assert data["CpuOptions"] == {"NestedVirtualization": "enabled"}
    assert "CpuOptions" not in _read_back(world, _spec())


def _partitioned(world: World, wanted: tuple[str, ...], pods: tuple[str, ...]) -> Any:
    """A claim of a pool in the partition group `hdfs` (3 partitions) whose plan allows `wanted` of them."""
    base = request(pods=pods)
    claim = replace(base.claim, requirements=(Requirement(wk.PLACEMENT_GROUP_PARTITION, "In", wanted),))
    return replace(base, claim=claim)


def test_a_claim_narrowed_to_partitions_launches_in_the_lowest_and_ec2s_pick_is_read_back(
    world: World,
) -> None:
    groups = PlacementGroups().attach(world.ec2)
    group = groups.create("hdfs", "partition", partition_count=3)
    klass = node_class(placement_group=SelectorTerm(name="hdfs"))
    assert Ec2PlacementGroups(world.ec2).group(klass) == PlacementGroup(
        group.group_id, "hdfs", "partition", 3
    )
    assert Ec2PlacementGroups(world.ec2).group(node_class(placement_group=SelectorTerm(name="nope"))) is None
    launcher = world.launcher(replace(cluster_config(classes=(klass,)), node_pools=(node_pool(),)))
    narrowed = launcher.launch(_partitioned(world, ("3", "2"), ("default/a",)), NOW)
    assert narrowed.status == "launched", narrowed
    data = _template_of(world, str(narrowed.claim.launch_template))  # type: ignore[union-attr]
    assert data["Placement"] == {"GroupId": group.group_id, "PartitionNumber": 2}
    labels = parse_bootstrap(data["UserData"]).labels
    assert (wk.PLACEMENT_GROUP_PARTITION, "2") in labels and (wk.PLACEMENT_GROUP_ID, group.group_id) in labels
    (instance,) = world.instances.describe([str(narrowed.claim.instance_id)])  # type: ignore[union-attr]
    assert instance.partition == 2
    open_claim = launcher.launch(_partitioned(world, ("1", "2", "3"), ("default/b",)), NOW)
    data = _template_of(world, str(open_claim.claim.launch_template))  # type: ignore[union-attr]
    assert data["Placement"] == {"GroupId": group.group_id}, "every partition allowed: EC2 picks"
    assert wk.PLACEMENT_GROUP_PARTITION not in dict(parse_bootstrap(data["UserData"]).labels)
    (instance,) = world.instances.describe([str(open_claim.claim.instance_id)])  # type: ignore[union-attr]
    assert instance.partition == 1, "EC2 (the hook) picks the emptiest partition"
