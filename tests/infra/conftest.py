"""One synthesis per test session: the demo stack, a variant that uses every deployment option, a nag canary.

Theory of operation: synth costs several seconds on a shared 2-core machine, so every test in this folder
reads the same cloud assembly. The app holds three stacks:

- `Longshore-demo`: exactly what `cdk synth -c cluster=demo` builds (clusters/demo.yaml through the real
  config loader, the real workflow definitions), Lambda bundling skipped (`aws:cdk:bundling-stacks`);
- `UserStack`: a user's own stack with `LongshoreCluster` inside, configured with VPC placement, an
  instance-profile-only node class plus `nodeRole`, an alarm topic, no access entry, no dashboard and a config larger
  than 4 KB (advanced SSM tier);
- `NagCanary`: an SQS queue that breaks AwsSolutions rules on purpose, proving the checks actually ran.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from infra.cluster import LongshoreCluster
from infra.config_source import ClusterSource, load_cluster_source
from infra.settings import DeploymentSettings, VpcPlacement
from infra.stack import LongshoreStack

from infra import nag
from longshore.core.model import (
    ClusterConfig,
    InterruptionSettings,
    NodeClass,
    NodePool,
    Origin,
    SelectorTerm,
)

REPO = Path(__file__).resolve().parents[2]
CDK_CLI = REPO / ".cdk-cli" / "node_modules" / ".bin"

PRIVATE_SETTINGS = DeploymentSettings(
    account="123456789012",
    vpc=VpcPlacement(("subnet-0aaa1111bbbb2222c", "subnet-0ddd3333eeee4444f"), ("sg-0123456789abcdef0",)),
    node_role="LongshoreNodes",
    alarm_topic_arn="arn:aws:sns:eu-west-1:123456789012:oncall",
    access_entry=False,
    dashboard=False,
    log_retention_days=7,
    function_memory_mb=1769,
)
PRIVATE_BUNDLE = "# a config larger than a standard SSM parameter\n" + "#" * 5000 + "\n"


def private_config() -> ClusterConfig:
    node_class_origin = Origin("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate")
    return ClusterConfig(
        name="private",
        region="eu-west-1",
        kubernetes_version="1.30",
        node_pools=(NodePool("default", Origin("karpenter.sh/v1alpha5", "Provisioner"), "legacy"),),
        node_classes=(
            NodeClass(
                "legacy",
                node_class_origin,
                instance_profile="LongshoreNodesProfile",
                launch_template_name="team-managed-template",
                ami_selector_terms=(SelectorTerm(ssm_parameter="/team/ami/latest"),),
            ),
        ),
        interruption=InterruptionSettings(max_receive_count=3),
    )


@dataclass(frozen=True)
class Synthesis:
    demo_source: ClusterSource
    demo: dict[str, Any]
    private: dict[str, Any]
    messages: dict[str, list[tuple[str, str, str]]]  # stack -> (level, construct path, message)
    outdir: Path


def _messages(artifact: cdk.cx_api.CloudFormationStackArtifact) -> list[tuple[str, str, str]]:
    return [(str(m.level.value).lower(), m.id, str(m.entry.data)) for m in artifact.messages]


@pytest.fixture(scope="session")
def synthesis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesis]:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:bundling-stacks": []})
    source = load_cluster_source("demo")
    demo = LongshoreStack(app, source, DeploymentSettings())
    user_stack = cdk.Stack(app, "UserStack", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    private = LongshoreCluster(
        user_stack,
        "Autoscaler",
        config=private_config(),
        config_bundle=PRIVATE_BUNDLE,
        settings=PRIVATE_SETTINGS,
    )
    nag.acknowledge(user_stack, private)
    canary = cdk.Stack(app, "NagCanary")
    sqs.Queue(canary, "PlainQueue")
    nag.check(app)
    assembly = app.synth()
    stacks = {
        stack.stack_name: assembly.get_stack_artifact(stack.artifact_id)
        for stack in (demo, user_stack, canary)
    }
    yield Synthesis(
        demo_source=source,
        demo=stacks[demo.stack_name].template,
        private=stacks[user_stack.stack_name].template,
        messages={name: _messages(artifact) for name, artifact in stacks.items()},
        outdir=outdir,
    )
    shutil.rmtree(outdir, ignore_errors=True)


@pytest.fixture(scope="session")
def demo_template(synthesis: Synthesis) -> Template:
    return Template.from_json(synthesis.demo)


@pytest.fixture(scope="session")
def private_template(synthesis: Synthesis) -> Template:
    return Template.from_json(synthesis.private)


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """Logical id -> properties of every resource of `kind` (tests match on properties, not on ids)."""
    return {
        logical: resource.get("Properties", {})
        for logical, resource in template["Resources"].items()
        if resource["Type"] == kind
    }


def function_by_handler(template: dict[str, Any], handler: str) -> tuple[str, dict[str, Any]]:
    matches = [
        (lid, p) for lid, p in resources(template, "AWS::Lambda::Function").items() if p["Handler"] == handler
    ]
    assert len(matches) == 1, f"expected one function with handler {handler}, found {len(matches)}"
    return matches[0]
