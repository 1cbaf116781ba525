"""Turning Cluster-port manifests and claims into the planner's input: ownership, PDBs, disrupting nodes,
unreadable pods, the pod-event clock behind consolidateAfter and the node classes' placement groups (moto, with
`longshore_sim.placement_groups` answering DescribePlacementGroups)."""

from __future__ import annotations

from dataclasses import replace

import boto3
from moto import mock_aws

from longshore.adapters.aws.network import Ec2PlacementGroups
from longshore.adapters.memory import MemoryOfferingAvailability
from longshore.core.disruption import planner
from longshore.core.disruption.decisions import PassedOver, PassedOverKind
from longshore.core.model import Requirement, SelectorTerm
from longshore.core.placement_groups import PlacementGroup
from longshore.services.disruption_events import event_reason_for
from longshore.services.disruption_snapshot import Snapshot, pdb_view, take_snapshot
from longshore.services.pod_events import PodEventTracker
from longshore_sim.placement_groups import PlacementGroups
from tests.builders import node_class
from tests.planner.fakes import TYPES, PlannerWorld, a_pool, cluster_config, node_manifest, running_pod
from tests.workflow.fakes import START, stamp


def snapshot_of(w: PlannerWorld, started: tuple[str, ...] = ()) -> Snapshot:
    return take_snapshot(
        w.cluster,
        w.world.claims,
        MemoryOfferingAvailability(),
        TYPES,
        w.config,
        w.clock.now(),
        started=started,
    )


def test_nodes_are_joined_with_their_claims_and_foreign_nodes_are_only_destinations() -> None:
    w = PlannerWorld()
    w.add_node("ours", type_name="m5.large")
    w.cluster.add_node(node_manifest("theirs", "i-foreign"))
    w.add_pod("web", "ours", cpu="500m")

    snap = snapshot_of(w)

    (ours,) = snap.input.nodes
    assert (ours.name, ours.instance_id, ours.claim_id, ours.price) == ("ours", "i-ours", "claim-ours", 0.096)
    assert [p.key for p in ours.reschedulable_pods()] == ["default/web"]
    assert [n.name for n in snap.input.unmanaged] == ["theirs"]
    plan = planner.plan(snap.input)
    assert plan.reason_for("theirs") is None  # never a candidate


def test_taint_deleting_claim_and_own_starts_mark_a_node_disrupting() -> None:
    w = PlannerWorld()
    for name in ("tainted", "deleting", "started", "calm"):
        w.add_node(name)
    w.cluster.nodes["tainted"]["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    claim = w.world.claims.get("claim-deleting")
    assert claim is not None
    w.world.claims.put(replace(claim, state="deleting"))

    snap = snapshot_of(w, started=("started",))

    disrupting = {n.name: n.disrupting for n in snap.input.nodes}
    assert disrupting == {"tainted": True, "deleting": True, "started": True, "calm": False}


def test_pdb_status_decides_what_it_allows_and_a_missing_status_allows_nothing() -> None:
    with_status = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 2},
    }
    without = {
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}},
    }
    no_selector = {"metadata": {"name": "none", "namespace": "shop"}, "spec": {}}

    web, db = pdb_view(with_status), pdb_view(without)

    assert web is not None and web.disruptions_allowed == 2 and web.namespace == "shop"
    assert db is not None and db.disruptions_allowed == 0
    assert pdb_view(no_selector) is None


def test_a_node_with_an_unreadable_pod_is_never_a_candidate() -> None:
    w = PlannerWorld()
    w.add_node("odd")
    broken = running_pod("broken", "odd", cpu="1")
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    w.cluster.add_pod(broken)

    snap = snapshot_of(w)

    assert snap.input.nodes == () and "odd" in snap.unreadable
    assert "default/broken" in snap.unreadable["odd"]


def test_pod_events_come_from_binds_deletions_and_vanished_pods() -> None:
    tracker = PodEventTracker()
    bound = running_pod("a", "n", bound_at=START - 100)
    assert tracker.observe("n", [bound], START) == START - 100

    terminating = running_pod("a", "n", bound_at=START - 100)
    terminating["metadata"]["deletionTimestamp"] = stamp(START + 25)
    terminating["metadata"]["deletionGracePeriodSeconds"] = 30
    assert tracker.observe("n", [terminating], START + 10) == START - 5  # deletion began 30 s before its end

    assert tracker.observe("n", [], START + 40) == START - 5  # it was seen terminating: no new event
    other = running_pod("b", "m", bound_at=START - 500)
    tracker.observe("m", [other], START)
    assert tracker.observe("m", [], START + 20) == START + 20  # vanished unseen: noticed now


def test_event_reasons_for_passed_over_nodes_follow_the_kind_not_the_words() -> None:
    def passed(reason: str, kind: PassedOverKind) -> PassedOver:
        return PassedOver("n", reason, kind)

    assert (
        event_reason_for(passed("empty for 30s of the 60s pool default waits", PassedOverKind.TRANSIENT))
        is None
    )
    assert (
        event_reason_for(passed("no cheaper option", PassedOverKind.UNCONSOLIDATABLE)) == "Unconsolidatable"
    )
    blocked = "PDB shop/db allows no disruption now (it protects pod shop/db-0)"
    assert event_reason_for(passed(blocked, PassedOverKind.BLOCKED)) == "DisruptionBlocked"
    # Words that used to decide the Event ("would have nowhere to go", "empty for ") no longer do.
    drifted = "drifted (AMI changed) but pod a/b would have nowhere to go (x)"
    assert event_reason_for(passed(drifted, PassedOverKind.BLOCKED)) == "DisruptionBlocked"
    assert event_reason_for(passed("empty for ever", PassedOverKind.UNCONSOLIDATABLE)) == "Unconsolidatable"
    rejected = "Balanced consolidation rejects the move for pool p: ..."
    assert event_reason_for(passed(rejected, PassedOverKind.REJECTED)) == "ConsolidationRejected"


def test_config_pools_without_nodes_are_fine() -> None:
    w = PlannerWorld(cluster_config())
    assert snapshot_of(w).input.nodes == ()


def test_drift_hashes_come_from_the_claim_before_the_node_annotations() -> None:
    w = PlannerWorld()
    w.add_node("a", annotations={"karpenter.sh/nodepool-hash": "v1-from-node"})
    w.add_node("b", annotations={"karpenter.sh/nodepool-hash": "v1-from-node"})
    claim = w.world.claims.get("claim-a")
    assert claim is not None
    w.world.claims.put(replace(claim, nodepool_hash="v1-from-claim"))

    hashes = {n.name: n.nodepool_hash for n in snapshot_of(w).input.nodes}

    assert hashes == {"a": "v1-from-claim", "b": "v1-from-node"}


def test_the_node_classes_placement_groups_are_looked_up_as_the_provisioner_does_and_failures_named() -> None:
    hdfs = replace(node_class("hdfs"), placement_group=SelectorTerm(name="hdfs"))
    gone = replace(node_class("gone"), placement_group=SelectorTerm(name="deleted-group"))
    pools = (a_pool(), replace(a_pool("hdfs"), node_class="hdfs"), replace(a_pool("gone"), node_class="gone"))
    w = PlannerWorld(
        replace(cluster_config(*pools), node_classes=(*cluster_config().node_classes, hdfs, gone))
    )
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        group = PlacementGroups().attach(ec2).create("hdfs", "partition", partition_count=3)
        snap = take_snapshot(
            w.cluster,
            w.world.claims,
            MemoryOfferingAvailability(),
            TYPES,
            w.config,
            w.clock.now(),
            placement_groups=Ec2PlacementGroups(ec2),
        )

    assert snap.input.placement_groups == (("hdfs", PlacementGroup(group.group_id, "hdfs", "partition", 3)),)
    assert snap.input.placement_unresolved == frozenset({"gone"})  # InvalidPlacementGroup.Unknown: logged
    assert snap.input.placement_blocker("gone") is not None and snap.input.placement_blocker("hdfs") is None


EBS_ZONE = "topology.ebs.csi.aws.com/zone"


def _zonal_volume_world(*, with_volume: bool) -> PlannerWorld:
    """An underused node in us-east-1b whose pod's claim is bound to a us-east-1b EBS volume, and a roomy
    node in us-east-1a the pod would fit on."""
    w = PlannerWorld()
    w.add_node("roomy", type_name="m5.2xlarge", zone="us-east-1a")
    w.add_node("lonely", type_name="m5.xlarge", zone="us-east-1b")
    w.add_pod("filler", "roomy", cpu="1")
    manifest = running_pod("db-0", "lonely", cpu="500m")
    if with_volume:
        manifest["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]
        zone = {"key": EBS_ZONE, "operator": "In", "values": ["us-east-1b"]}
        w.cluster.pvs.append(
            {
                "metadata": {"name": "pv-db"},
                "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}}},
            }
        )
        w.cluster.pvcs.append(
            {"metadata": {"name": "data-db-0", "namespace": "default"}, "spec": {"volumeName": "pv-db"}}
        )
    w.cluster.add_pod(manifest)
    return w


def test_consolidation_never_moves_a_pod_with_a_zonal_volume_to_another_zone() -> None:
    control = planner.plan(snapshot_of(_zonal_volume_world(with_volume=False)).input)
    moved_away = [  # without the volume, the pod goes to us-east-1a (onto roomy or a new node there)
        d
        for d in control.decisions
        if "lonely" in d.node_names and all(r.zone != "us-east-1b" for r in d.replacements)
    ]
    assert moved_away

    snap = snapshot_of(_zonal_volume_world(with_volume=True))
    (lonely,) = [n for n in snap.input.nodes if n.name == "lonely"]
    (db,) = lonely.reschedulable_pods()
    assert db.required_node_terms == (
        (Requirement(EBS_ZONE, "In", ("us-east-1b",)),),
    )  # normalized when solved
    plan = planner.plan(snap.input)
    for decision in plan.decisions:
        if "lonely" in decision.node_names:  # only a cheaper node in us-east-1b may take its pod
            assert decision.replacements and all(r.zone == "us-east-1b" for r in decision.replacements)


def test_a_pod_whose_claim_is_gone_keeps_its_node_out_of_disruption() -> None:
    w = _zonal_volume_world(with_volume=True)
    w.cluster.pvcs.clear()
    snap = snapshot_of(w)
    assert "lonely" in [n.name for n in snap.input.unmanaged]
    assert planner.plan(snap.input).reason_for("lonely") is None
