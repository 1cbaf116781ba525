"""`longshore explain` against the Kubernetes API emulator (real kubernetes client over loopback HTTP), with
claims from a file or from DynamoDB on moto, and the planner's and packing engine's own reasons."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable
from longshore.cli.explain import command
from longshore.core.claims import NodeClaim, provider_id
from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator
from tests.planner.fakes import node_manifest, running_pod
from tests.workflow.fakes import START

CONFIG = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge, m5.2xlarge]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: Never
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-demo-cluster
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo-cluster}}]
"""
PRICES = {"m5.large": 0.096, "m5.xlarge": 0.192}


@pytest.fixture
def emulator() -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator(clock=VirtualClock(START)) as running:
        yield running


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    config = tmp_path / "cluster.yaml"
    config.write_text(CONFIG)
    return {"config": config, "claims": tmp_path / "claims.json"}


def claim_for(name: str, type_name: str = "m5.xlarge") -> NodeClaim:
    return NodeClaim(
        id=f"claim-{name}",
        nodepool="default",
        node_class="default",
        instance_type=type_name,
        zone="us-east-1a",
        capacity_type="on-demand",
        price=PRICES[type_name],
        instance_id=f"i-{name}",
        node_name=name,
        provider_id=provider_id("us-east-1a", f"i-{name}"),
        state="initialized",
        launched_at=START - 7200,
        initialized_at=START - 7100,
        created_at=START - 7200,
    )


def seed(
    emulator: KubeApiEmulator,
    files: dict[str, Path],
    nodes: dict[str, str],
    pods: list[dict[str, Any]],
    *,
    foreign: tuple[str, ...] = (),
) -> None:
    claims = []
    for name, type_name in nodes.items():
        emulator.store.create(
            "nodes", node_manifest(name, f"i-{name}", type_name=type_name), keep_status=True
        )
        if name not in foreign:
            claims.append(asdict(claim_for(name, type_name)))
    for pod in pods:
        emulator.store.create("pods", pod, keep_status=True)
    files["claims"].write_text(json.dumps(claims))


def explain(emulator: KubeApiEmulator, files: dict[str, Path], target: str, *extra: str) -> Result:
    args = [
        target,
        "--config",
        str(files["config"]),
        "--cluster-name",
        "demo-cluster",
        "--server",
        emulator.url,
        "--claims",
        str(files["claims"]),
        "--now",
        str(START),
        *extra,
    ]
    return CliRunner().invoke(command, args, catch_exceptions=False)


def test_a_node_held_by_a_do_not_disrupt_pod_says_which_pod(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    guarded = running_pod("batch", "n1", cpu="1")
    guarded["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    seed(
        emulator, files, {"n1": "m5.xlarge", "n2": "m5.xlarge"}, [guarded, running_pod("web", "n2", cpu="3")]
    )

    result = explain(emulator, files, "n1", "--json")

    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["verdict"] == "blocked"
    assert answer["reason"] == "pod default/batch has karpenter.sh/do-not-disrupt=true"
    assert "budget Underutilized: 2 more now (2 nodes, 0 disrupting)" in answer["details"]


def test_a_node_whose_pods_fit_elsewhere_is_a_consolidation_candidate(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    seed(
        emulator,
        files,
        {"n1": "m5.xlarge", "n2": "m5.xlarge"},
        [running_pod("w1", "n1", cpu="1"), running_pod("w2", "n2", cpu="1")],
    )

    out1 = json.loads(explain(emulator, files, "n1", "--json").output)
    out2 = json.loads(explain(emulator, files, "n2", "--json").output)

    assert sorted([out1["verdict"], out2["verdict"]]) == ["blocked", "consolidation-candidate"]
    candidate = out1 if out1["verdict"] == "consolidation-candidate" else out2
    assert "saving $0.1920/h" in candidate["reason"] and "15 s re-validation" in candidate["reason"]


def test_a_node_without_a_claim_is_not_ours(emulator: KubeApiEmulator, files: dict[str, Path]) -> None:
    seed(emulator, files, {"mine": "m5.large", "stranger": "m5.large"}, [], foreign=("stranger",))

    result = explain(emulator, files, "stranger")

    assert result.exit_code == 0
    assert "not-managed" in result.output and "not owned by cluster demo-cluster" in result.output


def test_a_pending_pod_too_big_for_any_pool_gets_the_engines_reason(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    huge = running_pod("huge", "", cpu="64")
    huge["spec"].pop("nodeName", None)
    huge["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    seed(emulator, files, {"n1": "m5.large"}, [huge])

    answer = json.loads(explain(emulator, files, "default/huge", "--json").output)

    assert answer["verdict"] == "unschedulable"
    assert answer["reason"].startswith("no node can run it: ") and len(answer["reason"]) > 25


def test_a_pending_pod_that_needs_a_node_names_the_node_it_gets(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    seed(emulator, files, {"n1": "m5.large"}, [running_pod("full", "n1", cpu="1800m")])
    waiting = running_pod("waiting", "", cpu="1500m")
    waiting["spec"].pop("nodeName", None)
    waiting["status"] = {"phase": "Pending"}
    emulator.store.create("pods", waiting, keep_status=True)

    answer = json.loads(explain(emulator, files, "waiting", "--json").output)

    assert answer["verdict"] == "needs-node" and "m5.large (on-demand, us-east-1a" in answer["reason"]
    assert "not marked it Unschedulable yet" in answer["details"][0]


def test_claims_can_come_from_dynamodb(emulator: KubeApiEmulator, files: dict[str, Path]) -> None:
    seed(emulator, files, {"n1": "m5.large"}, [])
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="longshore",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "instance_id")
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-instance",
                    "KeySchema": [{"AttributeName": "instance_id", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        DynamoClaimStore(DynamoTable(client, "longshore")).put(claim_for("n1", "m5.large"))
        args = [
            "n1",
            "--config",
            str(files["config"]),
            "--cluster-name",
            "demo-cluster",
            "--server",
            emulator.url,
            "--table",
            "longshore",
            "--now",
            str(START),
            "--json",
        ]
        result = CliRunner().invoke(command, args, catch_exceptions=False)

    answer = json.loads(result.output)
    assert answer["verdict"] == "decision" and answer["reason"].startswith("empty: ")


def test_unknown_objects_and_bad_claims_files_are_reported(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    seed(emulator, files, {"n1": "m5.large"}, [])
    missing = explain(emulator, files, "nope")
    assert missing.exit_code == 1 and "no node or pod called 'nope'" in missing.output

    files["claims"].write_text('[{"id": "x", "nodepool": "default"}]')
    bad = explain(emulator, files, "n1")
    assert bad.exit_code == 2 and "claims.json: claim [0] (x)" in bad.output


def test_what_if_removed_says_where_pods_go_what_it_saves_and_what_blocks(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    # GIVEN two m5.xlarge nodes, n1 with a 1-cpu pod that fits next to n2's 1-cpu pod
    seed(
        emulator,
        files,
        {"n1": "m5.xlarge", "n2": "m5.xlarge"},
        [running_pod("a", "n1", cpu="1"), running_pod("b", "n2", cpu="1")],
    )
    # WHEN asked what removing n1 would do
    result = explain(emulator, files, "n1", "--what-if-removed", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    # THEN its pod moves to n2, nothing new is launched, and the node's whole price is saved
    assert answer["verdict"] == "would-save"
    assert answer["reason"].startswith(f"removing it saves ${PRICES['m5.xlarge']:.4f}/h")
    assert "default/a -> n2" in answer["details"]
    assert "nothing blocks a graceful removal (PDBs allow it)" in answer["details"]


def test_what_if_removed_names_the_blocker_and_the_new_node_it_would_need(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    big = running_pod("big", "n1", cpu="3")
    big["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    seed(emulator, files, {"n1": "m5.xlarge", "n2": "m5.xlarge"}, [big, running_pod("b", "n2", cpu="3")])
    answer = json.loads(explain(emulator, files, "n1", "--what-if-removed", "--json").output)
    assert any(line.startswith("new node ") and "m5.xlarge" in line for line in answer["details"])
    assert "blocked: pod default/big has karpenter.sh/do-not-disrupt=true" in answer["details"]
    assert answer["verdict"] == "would-save" and answer["reason"].startswith("removing it saves $0.0000/h")


def test_a_move_that_saves_less_than_the_pool_threshold_is_left_alone_with_the_reason(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    files["config"].write_text(
        CONFIG.replace(
            "metadata: {name: default}\nspec:\n  template:",
            "metadata:\n  name: default\n  annotations: {longshore.io/consolidation-min-savings: $1/h}\n"
            "spec:\n  template:",
            1,
        )
    )
    seed(
        emulator,
        files,
        {"n1": "m5.xlarge", "n2": "m5.xlarge"},
        [running_pod("w1", "n1", cpu="1"), running_pod("w2", "n2", cpu="1")],
    )

    answer = json.loads(explain(emulator, files, "n1", "--json").output)

    assert answer["verdict"] == "left-alone"
    assert answer["reason"] == (
        "left alone: the move saves $0.1920/h for pool default, under its minimum of $1.0000/h "
        "(longshore.io/consolidation-min-savings: $1/h)"
    )


# -- placement groups: the planner's lookup (`cli.placement_groups`) -----------------------------------------

GROUPS = Path(__file__).parents[1] / "fixtures" / "aws" / "placement-groups.json"  # hdfs: 3 partitions
PARTITION = "karpenter.k8s.aws/placement-group-partition"


def select_group(files: dict[str, Path], name: str) -> None:
    """The EC2NodeClass `default` selects the placement group `name` (`placementGroupSelector`)."""
    files["config"].write_text(
        CONFIG.replace(
            "  role: KarpenterNodeRole", f"  placementGroupSelector: {{name: {name}}}\n  role: Karpenter"
        )
    )


def pending_in_partition(name: str, partition: str) -> dict[str, Any]:
    pod = running_pod(name, "", cpu="1", node_selector={PARTITION: partition})
    pod["spec"].pop("nodeName", None)
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    return pod


def test_the_pods_plan_offers_the_partitions_of_the_group_read_as_the_planner_reads_it(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    # GIVEN a node class in the partition group hdfs (3 partitions) and pending pods asking for partitions 2, 5
    select_group(files, "hdfs")
    seed(
        emulator,
        files,
        {"n1": "m5.large"},
        [pending_in_partition("db", "2"), pending_in_partition("odd", "5")],
    )
    # WHEN explained without the groups, the partition key is open: both get a node
    for pod in ("default/db", "default/odd"):
        assert json.loads(explain(emulator, files, pod, "--json").stdout)["verdict"] == "needs-node"
    # AND with the groups read from a DescribePlacementGroups answer, the pool offers partitions 1..3 only
    found = [
        explain(emulator, files, pod, "--json", "--placement-groups", str(GROUPS)) for pod in ("db", "odd")
    ]
    assert all(result.exit_code == 0 for result in found), found[0].output
    db, odd = (json.loads(result.stdout) for result in found)
    assert db["verdict"] == "needs-node" and "in pool default" in db["reason"]
    assert odd["verdict"] == "unschedulable" and PARTITION in odd["reason"]
    assert not any("not looked up" in line for line in db["details"])


def planners_reason(emulator: KubeApiEmulator, files: dict[str, Path], node: str) -> str | None:
    """The disruption planner's own reason for `node`, its snapshot taken with the same file behind the
    provisioner's adapter (`Ec2PlacementGroups`) as the planner Lambda takes it with EC2."""
    from longshore.adapters.aws.network import Ec2PlacementGroups
    from longshore.adapters.aws.placement_groups_file import FilePlacementGroupsEc2, load_placement_group_file
    from longshore.adapters.kube.cluster import KubeCluster
    from longshore.adapters.memory import MemoryClaimStore, MemoryOfferingAvailability
    from longshore.cli.explain import kube_api_client, offline_catalog, read_claims_file
    from longshore.config import load_cluster
    from longshore.core.disruption import planner
    from longshore.services.disruption_snapshot import take_snapshot

    config = load_cluster([files["config"]], region="us-east-1", cluster_name="demo-cluster")
    store = MemoryClaimStore()
    for claim in read_claims_file(files["claims"]):
        store.put(claim)
    snapshot = take_snapshot(
        KubeCluster(kube_api_client(None, None, emulator.url, None), component="test"),
        store,
        MemoryOfferingAvailability(),
        offline_catalog(config.region),
        config,
        START,
        placement_groups=Ec2PlacementGroups(FilePlacementGroupsEc2(load_placement_group_file(GROUPS))),
    )
    assert snapshot.input.placement_unresolved == frozenset({"default"})
    return planner.plan(snapshot.input).reason_for(node)


def test_a_failed_group_lookup_refuses_the_move_as_the_planner_does_and_says_why(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    # GIVEN two half-empty nodes (one would be a consolidation candidate) whose node class selects a group
    # the DescribePlacementGroups answer does not have
    select_group(files, "gone")
    seed(
        emulator,
        files,
        {"n1": "m5.xlarge", "n2": "m5.xlarge"},
        [running_pod("w1", "n1", cpu="1"), running_pod("w2", "n2", cpu="1")],
    )
    # WHEN n1 and n2 are explained with that answer
    results = [explain(emulator, files, n, "--json", "--placement-groups", str(GROUPS)) for n in ("n1", "n2")]
    # THEN neither is a candidate: the planner refuses replacements in the class this pass, and says so
    for node, result in zip(("n1", "n2"), results, strict=True):
        assert result.exit_code == 0, result.output
        answer = json.loads(result.stdout)
        assert answer["verdict"] == "blocked"
        assert answer["reason"] == planners_reason(emulator, files, node)
        assert answer["reason"] == (
            "the placement group of node class default could not be looked up, "
            "so no replacement can be planned with its partitions"
        )
        assert (
            "placement group not looked up: EC2NodeClass default: spec.placementGroupSelector name gone "
            "matches no available placement group; no replacement is planned in pool(s) default this pass "
            "and none of their nodes is disrupted gracefully (an empty node may still go)"
        ) in answer["details"]
        assert f"{GROUPS}: EC2NodeClass default: spec.placementGroupSelector name gone" in result.stderr
    # AND a pending pod in that class is planned as the provisioner plans it: key open, the launch named
    waiting = running_pod("waiting", "", cpu="3500m")
    waiting["spec"].pop("nodeName", None)
    waiting["status"] = {"phase": "Pending"}
    emulator.store.create("pods", waiting, keep_status=True)
    answer = json.loads(
        explain(emulator, files, "waiting", "--json", "--placement-groups", str(GROUPS)).stdout
    )
    assert answer["verdict"] == "needs-node"
    assert any(
        line.startswith("placement group not looked up: EC2NodeClass default:")
        and "the provisioner plans pool default with the partition key open" in line
        for line in answer["details"]
    )


def test_what_if_removed_offers_no_new_node_in_a_class_whose_group_was_not_looked_up(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    # GIVEN two nodes too full to take each other's pods, in a class whose group lookup fails
    select_group(files, "gone")
    seed(
        emulator,
        files,
        {"n1": "m5.xlarge", "n2": "m5.xlarge"},
        [running_pod("a", "n1", cpu="3"), running_pod("b", "n2", cpu="3")],
    )
    # WHEN asked what removing n1 would do
    answer = json.loads(
        explain(
            emulator, files, "n1", "--what-if-removed", "--json", "--placement-groups", str(GROUPS)
        ).stdout
    )
    # THEN its pod has nowhere to go (no new claim in that pool, as a consolidation plans it) and the
    # placement group is named as what blocks the removal
    assert answer["verdict"] == "blocked"
    assert any(line.startswith("default/a has nowhere to run") for line in answer["details"])
    assert "blocked: the placement group of node class default could not be looked up" in "\n".join(
        answer["details"]
    )
    # AND with the group found, the move would launch a node in its partitions
    select_group(files, "hdfs")
    found = json.loads(
        explain(
            emulator, files, "n1", "--what-if-removed", "--json", "--placement-groups", str(GROUPS)
        ).stdout
    )
    assert any(line.startswith("new node ") for line in found["details"])


@pytest.mark.slow  # --live reads every instance type and price from moto (a few seconds)
def test_live_asks_ec2_and_a_denied_lookup_is_named_and_refuses_the_move(
    emulator: KubeApiEmulator, files: dict[str, Path]
) -> None:
    """`--live` without a file: DescribePlacementGroups on EC2 (moto) through `Ec2PlacementGroups`; EC2
    refusing the call (a botocore hook answers UnauthorizedOperation) is a failed lookup, as in the planner."""
    from botocore.exceptions import ClientError

    def deny(**_: Any) -> None:
        error = {"Code": "UnauthorizedOperation", "Message": "not allowed"}
        raise ClientError({"Error": error}, "DescribePlacementGroups")

    select_group(files, "hdfs")
    seed(
        emulator,
        files,
        {"n1": "m5.xlarge", "n2": "m5.xlarge"},
        [running_pod("w1", "n1", cpu="1"), running_pod("w2", "n2", cpu="1")],
    )
    with mock_aws():
        boto3.setup_default_session(region_name="us-east-1")
        try:
            boto3.DEFAULT_SESSION.events.register("before-call.ec2.DescribePlacementGroups", deny)
            result = explain(emulator, files, "n1", "--json", "--live")
        finally:
            boto3.DEFAULT_SESSION = None
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["verdict"] == "blocked" and "could not be looked up" in answer["reason"]
    [line] = [line for line in answer["details"] if line.startswith("placement group not looked up")]
    assert "EC2NodeClass default: spec.placementGroupSelector name hdfs: " in line
    assert "UnauthorizedOperation" in line and "EC2: EC2NodeClass default" in result.stderr
