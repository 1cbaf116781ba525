"""Configs that validate but cannot be deployed as they are: refused at synth, naming the field and value."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from infra.cluster import DeploymentError, _parameter_tier, node_roles
from infra.interruption import InterruptionQueue, InterruptionQueueError
from infra.settings import DeploymentSettings

from longshore.core.model import ClusterConfig, NodeClass, Origin

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

ORIGIN = Origin("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate")


def _config(*node_classes: NodeClass) -> ClusterConfig:
    return ClusterConfig(
        name="c", region="us-east-1", kubernetes_version="1.31", node_pools=(), node_classes=node_classes
    )


def test_an_instance_profile_only_node_class_needs_the_node_role_from_context() -> None:
    config = _config(
        NodeClass("legacy", ORIGIN, instance_profile="Profile"), NodeClass("v1", ORIGIN, role="RoleA")
    )
    with pytest.raises(
        DeploymentError, match=r"node classes legacy name an instance profile .* -c nodeRole=ROLE_NAME"
    ):
        node_roles(config, DeploymentSettings())
    assert node_roles(config, DeploymentSettings(node_role="RoleB")) == ("RoleA", "RoleB")


def test_roles_of_all_node_classes_are_passable() -> None:
    config = _config(
        NodeClass("a", ORIGIN, role="RoleB"),
        NodeClass("b", ORIGIN, role="RoleA"),
        NodeClass("c", ORIGIN, role="RoleA"),
    )
    assert node_roles(config, DeploymentSettings()) == ("RoleA", "RoleB")


def test_parameter_tier_follows_the_size_and_refuses_over_8_kb() -> None:
    assert _parameter_tier("x" * 4096).value == "STANDARD"
    assert _parameter_tier("x" * 4097).value == "ADVANCED"
    with pytest.raises(DeploymentError, match="8193 bytes; an SSM parameter holds at most 8192"):
        _parameter_tier("x" * 8193)


def test_a_max_receive_count_that_would_expire_messages_before_the_dlq_is_refused() -> None:
    stack = cdk.Stack(cdk.App(), "Scratch")
    fine = InterruptionQueue(stack, "Fine", queue_name="fine", max_receive_count=8, function_timeout_s=30)
    assert (fine.visibility_timeout_s, fine.retention_s) == (180, 9 * 180)
    with pytest.raises(
        InterruptionQueueError,
        match=r"spec.interruption.maxReceiveCount: 7000 receives x 180 s .* \(use 1 to 6719\)",
    ):
        InterruptionQueue(
            stack, "TooMany", queue_name="too-many", max_receive_count=7000, function_timeout_s=30
        )
