"""Node lifecycle (`services.lifecycle.Lifecycle`) against moto, the DynamoDB store and an in-memory cluster.

What the claims, instances and Nodes look like after each pass. Matrix: registration (record updated, Node
labelled and the unregistered taint removed), initialization (only once Ready and the startup taints are gone),
registration timeout (instance terminated, claim forgotten), launch timeout (claim forgotten), instance gone
(claim forgotten), a crash after CreateFleet (the launching claim adopts its instance), orphans (terminated
only after the grace; an instance whose claim exists is never an orphan).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

import pytest

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core import labels as wk
from longshore.core import telemetry
from longshore.core.claims import LAUNCH_TIMEOUT_S, ORPHAN_GRACE_S, REGISTRATION_TIMEOUT_S
from longshore.core.model import Requirement, SelectorTerm
from longshore.ports.kube import ClusterUnavailableError
from longshore.services.lifecycle import Lifecycle
from longshore_sim.aws import SimulatedCrash
from longshore_sim.clock import VirtualClock
from longshore_sim.placement_groups import PlacementGroups
from tests.adapters.conftest import World, cluster_config, node_class, node_pool, request
from tests.fakes import FakeCluster

NOW = 2_000_000.0
UNREGISTERED = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}
STARTUP = {"key": "example.com/agent-not-ready", "effect": "NoSchedule"}


def _lifecycle(world: World) -> tuple[Lifecycle, FakeCluster, MemoryMetricsSink]:
    cluster, sink = FakeCluster(VirtualClock(NOW)), MemoryMetricsSink()
    lifecycle = Lifecycle(
        store=world.store, instances=world.instances, cluster=cluster, config=world.config, metrics=sink
    )
    return lifecycle, cluster, sink


def _node(name: str, provider: str, *, ready: bool, taints: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {}},
        "spec": {"providerID": provider, "taints": taints},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def _launched(world: World, pods: tuple[str, ...] = ("default/a",)) -> tuple[str, str]:
    result = world.launcher().launch(request(pods=pods), NOW)
    assert result.claim is not None and result.claim.provider_id is not None
    return result.claim_id, result.claim.provider_id


def _crashed_after_create_fleet(world: World) -> tuple[str, str]:
    """A launch killed between CreateFleet and the record: (its claim id, the instance it left running)."""
    req = request()
    world.fleet.crash_after_create_fleet = 1
    with contextlib.suppress(SimulatedCrash):
        world.launcher().launch(req, NOW)
    [instance] = world.live_instances()
    return req.claim.id, str(instance["InstanceId"])


def _state(world: World, instance_id: str) -> str:
    reservations = world.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]  # type: ignore[attr-defined]
    return str(reservations[0]["Instances"][0]["State"]["Name"])


@pytest.mark.slow
def test_registration_then_initialization(world: World) -> None:
    lifecycle, cluster, sink = _lifecycle(world)
    claim_id, provider = _launched(world)
    cluster.add_node(_node("ip-10-0-0-1", provider, ready=False, taints=[UNREGISTERED, STARTUP]))

    first = lifecycle.reconcile(cluster.list_nodes(), NOW + 30)
    assert first.claim_ids("register") == (claim_id,)
    node = cluster.nodes["ip-10-0-0-1"]
    assert cluster.taints("ip-10-0-0-1") == [(STARTUP["key"], STARTUP["effect"])]
    assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
    assert node["metadata"]["finalizers"] == ["karpenter.sh/termination"], "deleting the Node drains it first"
    assert node["metadata"]["labels"]["team"] == "web"  # the pool's labels
    assert sink.total(telemetry.NODES_REGISTERED) == 1
    record = world.store.get(claim_id)
    assert record is not None and (record.state, record.node_name, record.registered_at) == (
        "registered",
        "ip-10-0-0-1",
        NOW + 30,
    )

    node["status"]["conditions"][0]["status"] = "True"  # Ready, but the startup taint is still there
    assert lifecycle.reconcile(cluster.list_nodes(), NOW + 40).actions == ()

    node["spec"]["taints"] = [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    done = lifecycle.reconcile(cluster.list_nodes(), NOW + 50)
    assert done.claim_ids("initialize") == (claim_id,)
    assert cluster.nodes["ip-10-0-0-1"]["metadata"]["labels"]["karpenter.sh/initialized"] == "true"
    record = world.store.get(claim_id)
    assert record is not None and (record.state, record.initialized_at) == ("initialized", NOW + 50)


@pytest.mark.slow
def test_an_instance_that_never_registers_is_terminated_and_its_claim_forgotten(world: World) -> None:
    lifecycle, _, sink = _lifecycle(world)
    claim_id, _ = _launched(world)
    instance_id = world.store.get(claim_id).instance_id  # type: ignore[union-attr]
    assert lifecycle.reconcile([], NOW + REGISTRATION_TIMEOUT_S - 1).actions == ()

    outcome = lifecycle.reconcile([], NOW + REGISTRATION_TIMEOUT_S)
    assert outcome.claim_ids("registration_timeout") == (claim_id,)
    assert outcome.terminated == (instance_id,)
    assert world.store.get(claim_id) is None
    assert _state(world, str(instance_id)) in ("shutting-down", "terminated")
    assert sink.total(telemetry.REGISTRATION_TIMEOUTS) == 1


@pytest.mark.slow
def test_a_claim_whose_instance_terminated_is_forgotten(world: World) -> None:
    lifecycle, _, _ = _lifecycle(world)
    claim_id, _ = _launched(world)
    world.instances.terminate([world.store.get(claim_id).instance_id])  # type: ignore[union-attr, list-item]
    outcome = lifecycle.reconcile([], NOW + 60)
    assert outcome.claim_ids("instance_gone") == (claim_id,)
    assert world.store.get(claim_id) is None


@pytest.mark.slow
def test_crash_after_create_fleet_the_lifecycle_adopts_the_instance(world: World) -> None:
    lifecycle, _, _ = _lifecycle(world)
    claim_id, instance_id = _crashed_after_create_fleet(world)

    outcome = lifecycle.reconcile([], NOW + ORPHAN_GRACE_S * 10)
    assert outcome.claim_ids("adopt") == (claim_id,)
    assert outcome.orphans == (), "an instance whose claim exists is adopted, never collected"
    record = world.store.get(claim_id)
    assert record is not None and (record.state, record.instance_id) == ("launched", instance_id)
    assert len(world.live_instances()) == 1


def test_a_launching_claim_without_an_instance_is_forgotten_after_the_launch_timeout(world: World) -> None:
    lifecycle, _, _ = _lifecycle(world)
    req = request()
    # a run that wrote the record and died before CreateFleet
    world.store.create_if_absent(
        replace(req.claim, state="launching", created_at=NOW, attempt_until=NOW + 60)
    )
    assert lifecycle.reconcile([], NOW + 60).actions == ()
    outcome = lifecycle.reconcile([], NOW + LAUNCH_TIMEOUT_S)
    assert outcome.claim_ids("launch_timeout") == (req.claim.id,)
    assert world.store.get(req.claim.id) is None


@pytest.mark.slow
def test_an_orphan_that_never_registered_is_terminated_only_after_the_registration_timeout(
    world: World,
) -> None:
    lifecycle, _, sink = _lifecycle(world)
    claim_id, instance_id = _crashed_after_create_fleet(world)
    world.store.delete(claim_id)  # the record is gone: nobody will adopt this instance
    kept_id, kept_provider = _launched(world, pods=("default/kept",))
    nodes = [_node("ip-10-0-0-2", kept_provider, ready=True, taints=[])]

    assert lifecycle.reconcile(nodes, NOW + ORPHAN_GRACE_S).orphans == (), "a minute is not enough"
    young = lifecycle.reconcile(nodes, NOW + REGISTRATION_TIMEOUT_S - 1)
    assert young.orphans == ()
    old = lifecycle.reconcile(nodes, NOW + REGISTRATION_TIMEOUT_S)
    assert old.orphans == (instance_id,)
    assert _state(world, instance_id) in ("shutting-down", "terminated")
    assert [i["InstanceId"] for i in world.live_instances()] == [world.store.get(kept_id).instance_id]  # type: ignore[union-attr]
    assert sink.total(telemetry.ORPHANS_TERMINATED) == 1


@pytest.mark.slow
def test_a_duplicate_instance_tagged_with_a_claim_that_records_another_is_collected(world: World) -> None:
    """A takeover that launched again (the first run's instance not yet visible) leaves two instances tagged
    with one claim; the record keeps one, and the other must not live on, unowned, forever."""
    lifecycle, _, sink = _lifecycle(world)
    claim_id, duplicate_id = _crashed_after_create_fleet(world)
    other_id, _ = _launched(world, pods=("default/other",))
    kept = world.store.get(other_id)
    crashed = world.store.get(claim_id)
    assert kept is not None and crashed is not None
    world.store.delete(other_id)
    world.store.put(
        replace(
            crashed,
            state="launched",
            instance_id=kept.instance_id,
            zone=kept.zone,
            provider_id=kept.provider_id,
            launched_at=NOW,
            attempt_until=None,
        )
    )

    nodes = [_node("ip-10-0-0-2", str(kept.provider_id), ready=True, taints=[])]
    outcome = lifecycle.reconcile(nodes, NOW + REGISTRATION_TIMEOUT_S)
    assert outcome.orphans == (duplicate_id,)
    assert _state(world, duplicate_id) in ("shutting-down", "terminated")
    assert [i["InstanceId"] for i in world.live_instances()] == [kept.instance_id]
    assert sink.total(telemetry.ORPHANS_TERMINATED) == 1


@pytest.mark.slow
def test_a_registration_whose_node_patch_failed_is_retried_next_pass(world: World) -> None:
    lifecycle, cluster, _ = _lifecycle(world)
    claim_id, provider = _launched(world)
    cluster.add_node(_node("ip-10-0-0-1", provider, ready=True, taints=[UNREGISTERED]))
    cluster.fail_calls["patch_node"] = 1
    with contextlib.suppress(ClusterUnavailableError):
        lifecycle.reconcile(cluster.list_nodes(), NOW + 30)

    retried = lifecycle.reconcile(cluster.list_nodes(), NOW + 40)
    assert retried.claim_ids("register") == (claim_id,)
    assert cluster.taints("ip-10-0-0-1") == [], "the unregistered taint is removed, or no pod ever lands"
    done = lifecycle.reconcile(cluster.list_nodes(), NOW + 50)
    assert done.claim_ids("initialize") == (claim_id,)


class _RegisteredJustBeforeTheDelete:
    """The DynamoDB claim store, with another run registering the claim just before any delete of it lands."""

    def __init__(self, world: World, node_name: str) -> None:
        self._store = world.store
        self._node_name = node_name
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _register_first(self, claim_id: str) -> None:
        current = self._store.get(claim_id)
        if not self.raced and current is not None and current.state == "launched":
            self.raced = True
            self._store.compare_and_put(
                replace(current, state="registered", node_name=self._node_name, registered_at=NOW)
            )

    def delete(self, claim_id: str) -> None:
        self._register_first(claim_id)
        self._store.delete(claim_id)

    def delete_if(self, claim_id: str, expected_version: int) -> bool:
        self._register_first(claim_id)
        return bool(self._store.delete_if(claim_id, expected_version))


def test_a_claim_another_run_registers_while_it_times_out_is_neither_deleted_nor_terminated(
    world: World,
) -> None:
    """The pass decided `registration_timeout` from a snapshot without the Node; another run registered the
    claim before the deletion landed. The registered claim and its instance must survive."""
    claim_id, _ = _launched(world)
    instance_id = str(world.store.get(claim_id).instance_id)  # type: ignore[union-attr]
    racing = _RegisteredJustBeforeTheDelete(world, "ip-10-0-0-9")
    cluster = FakeCluster(VirtualClock(NOW))
    lifecycle = Lifecycle(
        store=racing,  # type: ignore[arg-type]
        instances=world.instances,
        cluster=cluster,
        config=world.config,
        metrics=MemoryMetricsSink(),
    )

    outcome = lifecycle.reconcile([], NOW + REGISTRATION_TIMEOUT_S)

    assert racing.raced
    assert outcome.claim_ids("registration_timeout") == ()
    record = world.store.get(claim_id)
    assert record is not None and (record.state, record.node_name) == ("registered", "ip-10-0-0-9")
    assert _state(world, instance_id) in ("pending", "running"), "a registered node's instance is kept"


def _tagged_instances(world: World, count: int) -> list[str]:
    """`count` running instances tagged for the cluster (as Longshore launches them), with no claim at all."""
    ids = []
    for n in range(count):
        _launched(world, pods=(f"default/p{n}",))
    for claim in world.store.list():
        ids.append(str(claim.instance_id))
        world.store.delete(claim.id)  # the claim table was emptied (or re-created)
    return sorted(ids)


def _nodes_for(world: World, instance_ids: list[str]) -> list[dict[str, Any]]:
    described = world.instances.describe(instance_ids)
    return [
        _node(f"ip-10-0-1-{n}", f"aws:///{i.zone}/{i.instance_id}", ready=True, taints=[])
        for n, i in enumerate(described)
    ]


@pytest.mark.slow
def test_an_emptied_claim_table_terminates_no_live_node_and_rebuilds_the_claims(world: World) -> None:
    lifecycle, cluster, sink = _lifecycle(world)
    ids = _tagged_instances(world, 3)
    nodes = _nodes_for(world, ids)
    for node in nodes:
        cluster.add_node(node)

    outcome = lifecycle.reconcile(cluster.list_nodes(), NOW + 24 * 3600)

    assert outcome.orphans == ()
    assert sorted(str(i["InstanceId"]) for i in world.live_instances()) == ids, "every live node kept"
    rebuilt = {c.instance_id: c for c in world.store.list()}
    assert sorted(rebuilt) == ids
    assert {(c.nodepool, c.state) for c in rebuilt.values()} == {("default", "registered")}
    assert sorted(str(c.node_name) for c in rebuilt.values()) == sorted(n["metadata"]["name"] for n in nodes)
    assert sink.total(telemetry.ORPHANS_TERMINATED) == 0
    after = lifecycle.reconcile(cluster.list_nodes(), NOW + 24 * 3600 + 10)
    assert sorted(after.claim_ids("initialize")) == sorted(c.id for c in rebuilt.values())


@pytest.mark.slow
def test_a_readopted_node_that_never_registered_is_registered_then_initialized(world: World) -> None:
    """The claim table lost between launch and registration (chaos seed 87): the Node joined with the
    unregistered taint and no claim. Its re-adopted claim is `launched`, so the next pass registers it (taint
    removed) and the one after initializes it; a `registered` claim kept the taint forever while the provisioner
    counted the Node as room for pending pods."""
    lifecycle, cluster, _ = _lifecycle(world)
    [instance_id] = _tagged_instances(world, 1)
    [node] = _nodes_for(world, [instance_id])
    node["spec"]["taints"] = [UNREGISTERED]
    cluster.add_node(node)
    name = node["metadata"]["name"]

    lifecycle.reconcile(cluster.list_nodes(), NOW + 24 * 3600)
    claim = world.store.by_instance(instance_id)
    assert claim is not None and claim.state == "launched" and claim.node_name is None

    registered = lifecycle.reconcile(cluster.list_nodes(), NOW + 24 * 3600 + 10)
    assert registered.claim_ids("register") == (claim.id,)
    assert cluster.taints(name) == [], "the unregistered taint is removed, or no pod ever lands"
    done = lifecycle.reconcile(cluster.list_nodes(), NOW + 24 * 3600 + 20)
    assert done.claim_ids("initialize") == (claim.id,)


@pytest.mark.slow
def test_mass_orphans_stop_collection_and_raise_the_metric(world: World) -> None:
    """Three never-registered unclaimed instances of three: more than max(1, 10 %) = 1, so none is taken."""
    lifecycle, _, sink = _lifecycle(world)
    ids = _tagged_instances(world, 3)

    outcome = lifecycle.reconcile([], NOW + 24 * 3600)

    assert outcome.orphans == ()
    assert sorted(str(i["InstanceId"]) for i in world.live_instances()) == ids
    assert sink.total(telemetry.ORPHANS_MASS_DETECTED) == 3
    assert sink.total(telemetry.ORPHANS_TERMINATED) == 0


@pytest.mark.slow
def test_one_pass_collects_at_most_one_orphan_in_a_small_cluster(world: World) -> None:
    """One never-registered orphan among live nodes is within the bound; a live-node orphan is re-adopted."""
    lifecycle, cluster, sink = _lifecycle(world)
    ids = _tagged_instances(world, 2)
    with_node, without = ids[0], ids[1]
    for node in _nodes_for(world, [with_node]):
        cluster.add_node(node)
    for n in range(10):  # a cluster of 12 live nodes with claims: bound = 1
        _launched(world, pods=(f"default/kept-{n}",))
    claimed = [c for c in world.store.list() if c.instance_id not in ids]
    for claim in claimed:
        cluster.add_node(_node(f"kept-{claim.id}", str(claim.provider_id), ready=True, taints=[]))

    outcome = lifecycle.reconcile(cluster.list_nodes(), NOW + REGISTRATION_TIMEOUT_S)

    assert outcome.orphans == (without,)
    assert world.store.by_instance(with_node) is not None, "the orphan with a node was re-adopted"
    assert _state(world, with_node) in ("pending", "running")
    assert sink.total(telemetry.ORPHANS_MASS_DETECTED) == 0


def test_a_node_ec2_placed_in_a_partition_is_labelled_with_it_at_registration(world: World) -> None:
    # Karpenter's PlacementGroupRegistrationHook: a claim left open on the partition launches without one, and
    # the partition EC2 picked (DescribeInstances `Placement.PartitionNumber`) labels the node
    groups = PlacementGroups().attach(world.ec2)
    groups.create("hdfs", "partition", partition_count=3)
    klass = node_class(placement_group=SelectorTerm(name="hdfs"))
    config = replace(cluster_config(classes=(klass,)), node_pools=(node_pool(),))
    base = request()
    every = (Requirement(wk.PLACEMENT_GROUP_PARTITION, "In", ("1", "2", "3")),)
    result = world.launcher(config).launch(replace(base, claim=replace(base.claim, requirements=every)), NOW)
    assert result.claim is not None and result.claim.provider_id is not None
    cluster, sink = FakeCluster(VirtualClock(NOW)), MemoryMetricsSink()
    lifecycle = Lifecycle(
        store=world.store, instances=world.instances, cluster=cluster, config=config, metrics=sink
    )
    cluster.add_node(_node("ip-10-0-0-9", result.claim.provider_id, ready=False, taints=[UNREGISTERED]))
    done = lifecycle.reconcile(cluster.list_nodes(), NOW + 30, check_cloud=False)
    assert done.claim_ids("register") == (result.claim_id,)
    assert cluster.nodes["ip-10-0-0-9"]["metadata"]["labels"][wk.PLACEMENT_GROUP_PARTITION] == "1"
