"""`instanceStorePolicy: RAID0` in each family's user data, as Karpenter writes it
(aws/karpenter-provider-aws `pkg/providers/amifamily/bootstrap/`): AL2 `bootstrap.sh --local-disks raid0`,
AL2023 `spec.instance.localStorage.strategy: RAID0`, Bottlerocket the `000-mount-instance-storage` bootstrap
command (with `--dirs` before Bottlerocket 1.46, `version.SupportsDefaultBind`); each read back by
`parse_bootstrap`, and the node class's own Bottlerocket settings kept."""

from __future__ import annotations

import tomllib
from dataclasses import replace

import pytest
import yaml

from longshore.adapters.aws.amis import bottlerocket_version, supports_default_bind
from longshore.adapters.aws.userdata import BOTTLEROCKET_LEGACY_BIND_DIRS, mime_parts, parse_bootstrap
from longshore.adapters.aws.userdata_render import render_user_data
from longshore.core.model import SelectorTerm
from tests.adapters.conftest import node_class
from tests.adapters.test_userdata import BOOTSTRAP, CLUSTER

RAID0 = replace(BOOTSTRAP, instance_store_raid0=True)


def test_al2_passes_local_disks_raid0_to_bootstrap_sh() -> None:
    text = render_user_data("AL2", CLUSTER, RAID0)
    assert "--kubelet-extra-args '" in text
    assert "\\\n--local-disks raid0" in text
    assert parse_bootstrap(text) == RAID0
    assert "--local-disks" not in render_user_data("AL2", CLUSTER, BOOTSTRAP)


def test_al2023_sets_the_nodeconfig_local_storage_strategy() -> None:
    text = render_user_data("AL2023", CLUSTER, RAID0)
    (node_config,) = [yaml.safe_load(body) for kind, body in mime_parts(text) if "node.eks.aws" in kind]
    assert node_config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    assert parse_bootstrap(text) == RAID0
    plain = yaml.safe_load(mime_parts(render_user_data("AL2023", CLUSTER, BOOTSTRAP))[-1][1])
    assert "instance" not in plain["spec"]


def test_bottlerocket_adds_the_mount_instance_storage_command() -> None:
    doc = tomllib.loads(render_user_data("Bottlerocket", CLUSTER, RAID0))
    assert doc["settings"]["bootstrap-commands"] == {
        "000-mount-instance-storage": {
            "commands": [
                ["apiclient", "ephemeral-storage", "init"],
                ["apiclient", "ephemeral-storage", "bind"],
            ],
            "mode": "always",
            "essential": True,
        }
    }
    assert parse_bootstrap(render_user_data("Bottlerocket", CLUSTER, RAID0)) == RAID0
    assert (
        "bootstrap-commands"
        not in tomllib.loads(render_user_data("Bottlerocket", CLUSTER, BOOTSTRAP))["settings"]
    )


def test_bottlerocket_before_1_46_binds_the_named_directories_and_keeps_the_node_class_commands() -> None:
    legacy = replace(RAID0, ephemeral_bind_dirs=BOTTLEROCKET_LEGACY_BIND_DIRS)
    own = '[settings.bootstrap-commands.010-mine]\ncommands = [["echo", "hi"]]\nmode = "once"\nessential = false\n'
    text = render_user_data("Bottlerocket", CLUSTER, legacy, custom=own)
    commands = tomllib.loads(text)["settings"]["bootstrap-commands"]
    assert commands["010-mine"]["commands"] == [["echo", "hi"]]
    assert commands["000-mount-instance-storage"]["commands"][1] == [
        "apiclient",
        "ephemeral-storage",
        "bind",
        "--dirs",
        "/var/lib/containerd",
        "/var/lib/kubelet",
        "/var/log/pods",
    ]
    assert parse_bootstrap(text) == legacy


@pytest.mark.parametrize(
    ("version", "default_bind"),
    [
        ("latest", True),
        ("v1.46.0", True),
        ("1.47.1", True),
        ("v2.0.0", True),
        ("v1.45.2", False),
        ("", False),
        ("v1", False),
    ],
)
def test_default_bind_from_bottlerocket_1_46(version: str, default_bind: bool) -> None:
    assert supports_default_bind(version) is default_bind


def test_the_bottlerocket_version_comes_from_the_alias_a_name_term_or_the_image_name() -> None:
    alias = node_class(ami_selector_terms=(SelectorTerm(alias="bottlerocket@v1.45.0"),))
    assert bottlerocket_version(alias) == "v1.45.0"
    named = node_class(
        ami_selector_terms=(SelectorTerm(name="bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a"),)
    )
    assert bottlerocket_version(named) == "v1.46.0"
    tagged = node_class(ami_selector_terms=(SelectorTerm(tags=(("team", "hpc"),)),))
    assert bottlerocket_version(tagged, "bottlerocket-aws-k8s-1.31-x86_64-v1.40.0-abc") == "v1.40.0"
    assert bottlerocket_version(tagged) == ""
