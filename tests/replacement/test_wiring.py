"""The workflow-steps Lambda wires the real replacement launcher from its environment (moto for AWS).

Only the Kubernetes client is swapped, for the in-memory cluster: moto's EKS endpoint is not an API server.
Everything else is what `build_ports` builds from the environment variables: the cluster config from SSM, the
DynamoDB claim store and ICE cache, the EC2 catalog and the fleet launcher. The test asserts the outcome of a
surge: an instance tagged with the replacement's claim id, and its record in the table the environment names.
The catalog is read from moto's DescribeInstanceTypes in the slow variant (about 10 s: moto pages through every
type); the fast variant has `load_catalog` answer with the same shapes from moto's data files for the types
the test needs, after checking it was asked for the right region.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from longshore.adapters.aws import instance_types, pricing
from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.network import Ec2PlacementGroups
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim
from longshore.services.replacement import ClusterReplacementLauncher, replacement_claim_id
from longshore.wiring import workflow_steps
from longshore.wiring.runtime import Runtime
from longshore_sim.aws import seed_cluster
from longshore_sim.clock import VirtualClock
from tests.builders import real_catalog
from tests.conftest import VALID_V1_MANIFESTS
from tests.fakes import FakeCluster
from tests.replacement.conftest import NOW, node_manifest, running_pod

CLUSTER = "demo-cluster"  # the name the valid-v1 seed manifests select subnets, groups and the role by
TABLE = "longshore-demo"


SMALL_CATALOG = ("c5.large", "c5.xlarge", "m5.large", "m5.xlarge", "r5.large")


@pytest.fixture(params=["seed-shapes", pytest.param("describe-instance-types", marks=pytest.mark.slow)])
def environment(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[FakeCluster]:
    from longshore.config.loader import bundle_cluster

    instance_types.clear_cache()
    pricing.clear_cache()
    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        seed_cluster(session, CLUSTER, table_name=TABLE)
        session.client("ssm").put_parameter(
            Name="/longshore/demo/config",
            Type="String",
            Value=bundle_cluster([VALID_V1_MANIFESTS], cluster_name=CLUSTER, region="us-east-1"),
        )
        for variable, value in {
            "LONGSHORE_CLUSTER_NAME": CLUSTER,
            "AWS_REGION": "us-east-1",
            "LONGSHORE_CONFIG_PARAMETER": "/longshore/demo/config",
            "LONGSHORE_TABLE_NAME": TABLE,
        }.items():
            monkeypatch.setenv(variable, value)
        if request.param == "seed-shapes":

            def load_catalog(ec2: Any, pricing_client: Any, region: str, clock: Any, **_: Any) -> Catalog:
                assert region == "us-east-1" and ec2.meta.service_model.service_name == "ec2"
                return real_catalog(region, SMALL_CATALOG)

            monkeypatch.setattr("longshore.adapters.aws.instance_types.load_catalog", load_catalog)
        cluster = FakeCluster(VirtualClock(NOW))
        monkeypatch.setattr(
            "longshore.adapters.kube.cluster.KubeCluster", lambda api, component, **_: cluster
        )
        yield cluster
    instance_types.clear_cache()
    pricing.clear_cache()


def live_instances() -> list[dict[str, Any]]:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    pages = ec2.describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )
    return [i for r in pages["Reservations"] for i in r["Instances"]]


@pytest.mark.slow
def test_build_ports_wires_the_real_replacement_launcher(environment: FakeCluster) -> None:
    ports = workflow_steps.build_workflow_steps(Runtime.from_env())
    assert isinstance(ports.replacements, ClusterReplacementLauncher)
    # the node classes' placement groups are looked up as the provisioner looks them up
    assert isinstance(ports.replacements._planner._placement_groups, Ec2PlacementGroups)

    node = node_manifest("old", "i-0000000000000old1", instance_type="m5.large")
    node["metadata"]["labels"]["karpenter.sh/nodepool"] = "general"
    environment.add_node(node)
    environment.add_pod(running_pod("web-0", "old", cpu="1500m", memory="2Gi"))
    claim = NodeClaim(
        id="general-old",
        nodepool="general",
        node_class="default",
        instance_id="i-0000000000000old1",
        node_name="old",
        state="initialized",
    )
    ports.claims.put(claim)

    claim_id = ports.replacements.launch_replacement(claim, node, "rotation", NOW)

    assert claim_id == replacement_claim_id("general-old", "rotation")
    [instance] = live_instances()
    assert tagnames.from_ec2(instance["Tags"])[tagnames.NODECLAIM] == claim_id
    record = ports.claims.get(claim_id)  # the store is the table LONGSHORE_TABLE_NAME names
    assert record is not None and record.state == "launched" and record.pods == ("default/web-0",)
    assert record.instance_id == instance["InstanceId"] and record.nodepool_hash is not None
