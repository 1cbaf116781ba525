"""The provisioner end to end on the simulated world, and each fault of issue #4's list, asserting outcomes.

Every test builds a `SimulatedWorld` (moto in-process, the API emulator on 127.0.0.1, virtual time) and runs
the provisioner the way the Lambda does (`world.invoke`: passes until shortly before a virtual deadline).
Outcomes are read from outside the system under test: pods Running in the emulator, instances in moto, Events
posted to the API, claim records in DynamoDB.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from urllib3.exceptions import ReadTimeoutError

from longshore.adapters.kube import cluster as kube_cluster
from longshore.adapters.kube.retry import is_transient
from longshore.core import telemetry
from longshore.core.claims import REGISTRATION_TIMEOUT_S
from longshore.core.offerings import UNAVAILABLE_TTL_S
from longshore.services.provisioner import LEASE_NAME, ProvisionerSettings
from longshore_sim.aws import SimulatedCrash
from longshore_sim.kubeapi import Fault, timeouts
from longshore_sim.world import SimulatedWorld
from tests.provisioning.conftest import (
    all_instances,
    events,
    instances_by_claim,
    running,
    small_pool_config,
    unbound,
)

pytestmark = pytest.mark.slow

MakeWorld = Callable[..., SimulatedWorld]


def scale(world: SimulatedWorld, replicas: int, name: str = "inflate") -> float:
    """Scale and let the controllers and the scheduler run; returns the instant the pods became pending."""
    world.cluster.scale(name, replicas)
    world.sleep(0)
    return world.clock.now()


def no_duplicates(world: SimulatedWorld) -> bool:
    return all(len(ids) == 1 for ids in instances_by_claim(world).values())


@pytest.mark.slow
def lease_expiry(world: SimulatedWorld) -> float:
    item = world.dynamodb.get_item(
        TableName=world.table.name, Key={"pk": {"S": f"lease#{LEASE_NAME}"}, "sk": {"S": "lease"}}
    )["Item"]
    return float(item["expires"]["N"])


def test_a_held_lease_is_renewed_once_15_s_old_not_at_every_pass_and_still_excludes_another_run(
    make_world: MakeWorld,
) -> None:
    world = make_world()
    run, other = world.service("run-a"), world.service("run-b")
    taken = world.clock.now()
    run.run_pass()
    assert lease_expiry(world) == pytest.approx(taken + 60)
    world.sleep(10)
    run.run_pass()  # 10 s old: held for 50 s more, not written
    assert lease_expiry(world) == pytest.approx(taken + 60) and run.lease_taken_at == taken
    assert other.run_pass().status == "lease-held"
    world.sleep(6)
    renewed = world.clock.now()
    run.run_pass()  # 16 s old: renewed
    assert lease_expiry(world) == pytest.approx(renewed + 60) and run.lease_taken_at == renewed
    run.release()
    assert other.run_pass().status == "idle"


def test_pending_pods_get_nodes_and_the_nodes_are_registered_and_initialized(make_world: MakeWorld) -> None:
    world = make_world()
    pending_at = scale(world, 5)
    world.invoke(timeout_s=90)

    assert world.fleet_request_times and world.fleet_request_times[0] - pending_at <= 2.0
    assert len(running(world)) == 5 and not unbound(world)
    claims = world.store.list()
    assert claims and all(c.state == "initialized" for c in claims)
    assert no_duplicates(world) and len(world.live_instances()) == len(claims)
    for node in world.cluster.nodes():
        assert node["metadata"]["labels"]["karpenter.sh/initialized"] == "true"
        assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
        assert "karpenter.sh/unregistered" not in [t["key"] for t in node["spec"].get("taints") or []]
    assert world.metrics.total(telemetry.CLAIMS_CREATED) == len(claims)
    assert world.metrics.total(telemetry.NODES_INITIALIZED) == len(claims)
    assert world.metrics.last(telemetry.CLUSTER_COST_PER_HOUR) == pytest.approx(
        sum(c.price or 0 for c in claims)
    )
    # the per-pool gauges a Karpenter dashboard reads (docs/metrics.md): NodeClaims and Nodes by pool
    pool = claims[0].nodepool
    assert world.metrics.last(telemetry.NODECLAIMS, NodePool=pool) == len(claims)
    by_type = {c.capacity_type for c in claims}
    nodes = sum(world.metrics.last(telemetry.NODES, NodePool=pool, CapacityType=ct) or 0 for ct in by_type)
    assert nodes == len(claims)


def test_ec2_throttling_is_retried_with_backoff_and_still_launches_once(make_world: MakeWorld) -> None:
    world = make_world()
    world.throttle.throttle("CreateFleet", 6)  # more than botocore's 4 attempts: our own backoff takes over
    scale(world, 5)
    world.invoke(timeout_s=120)

    assert world.throttle.remaining("CreateFleet") == 0 and world.throttle.injected["CreateFleet"] == 6
    assert len(running(world)) == 5
    assert no_duplicates(world)
    first, second = world.fleet_request_times[:2]
    assert second - first >= 1.0, "the retry waited (virtual time) instead of hammering EC2"


@pytest.mark.slow
def test_kube_api_5xx_and_timeouts_are_retried(
    make_world: MakeWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world()
    monkeypatch.setattr(kube_cluster, "REQUEST_TIMEOUT", (1.0, 0.3))
    faults = world.cluster.emulator.faults
    server_errors = faults.add(Fault(resource="pods", verb="list", status=503, times=3))
    slow = faults.add(Fault(resource="nodes", verb="list", latency=0.6, times=2))
    scale(world, 3)
    world.invoke(timeout_s=90)

    assert server_errors.hits == 3 and slow.hits == 2
    assert len(running(world)) == 3 and no_duplicates(world)


def test_kube_api_read_timeouts_on_virtual_time_are_retried_and_a_served_write_is_not_repeated(
    make_world: MakeWorld,
) -> None:
    """The chaos `k8s-timeout` fault: answers that never come cost the client its 30 s read timeout of virtual
    time and raise urllib3's ReadTimeoutError; the retry layer goes on, and a node list the server did serve
    (its answer lost) is read again, nothing launched twice."""
    world = make_world()
    faults = world.cluster.emulator.faults
    world.time_out_kube_api()  # every function's client, as the chaos fault does
    lost = faults.add(Fault(resource="pods", verb="list", timeout=True, times=2))
    served = faults.add(Fault(resource="nodes", verb="list", timeout=True, served=True, times=1))
    started = world.clock.now()
    scale(world, 3)
    world.invoke(timeout_s=240)

    assert lost.hits == 2 and served.hits == 1
    assert world.fleet_request_times[0] - started >= 3 * timeouts.DEFAULT_READ_TIMEOUT_S
    assert len(running(world)) == 3 and no_duplicates(world)


@pytest.mark.slow
def test_a_read_timeout_is_what_urllib3_raises_and_the_retry_layer_retries_it(make_world: MakeWorld) -> None:
    world = make_world()
    faults = world.cluster.emulator.faults
    timeouts.install(world.api_client, faults, world.sleep)
    faults.add(Fault(resource="nodes", verb="list", timeout=True, times=1))
    started = world.clock.now()
    with pytest.raises(ReadTimeoutError, match=r"read timeout=30"):
        world.api_client.call_api("/api/v1/nodes", "GET", _request_timeout=kube_cluster.REQUEST_TIMEOUT)
    assert world.clock.now() - started == pytest.approx(kube_cluster.REQUEST_TIMEOUT[1])
    assert is_transient(ReadTimeoutError(None, "/api/v1/nodes", "Read timed out."))  # type: ignore[arg-type]


@pytest.mark.slow
def test_an_api_server_outage_longer_than_the_retries_does_not_end_the_run(make_world: MakeWorld) -> None:
    world = make_world()
    outage = world.cluster.emulator.faults.add(Fault(resource="pods", verb="list", status=500, times=12))
    scale(world, 3)
    world.invoke(timeout_s=90)

    assert outage.hits == 12
    assert len(running(world)) == 3 and no_duplicates(world)


@pytest.mark.slow
def test_capacity_errors_on_every_type_leave_pods_pending_with_a_reason_and_retry_after_the_ttl(
    make_world: MakeWorld, tmp_path: Path
) -> None:
    world = make_world(small_pool_config(tmp_path))
    for instance_type in ("m5.large", "m5.xlarge"):
        for zone in world.zones:
            world.fleet.make_unavailable(instance_type, zone, "on-demand")
    scale(world, 2)
    world.run_schedule(UNAVAILABLE_TTL_S * 2 + 15)  # two TTLs of trying, one invocation a minute

    assert len(unbound(world)) == 2 and not world.live_instances()
    since_first = [t - world.fleet_request_times[0] for t in world.fleet_request_times]
    assert all(t < 10 or t >= UNAVAILABLE_TTL_S for t in since_first), "nothing asked again within the TTL"
    assert len(since_first) <= 2 * 2, "each refused offering is asked for at most once per TTL"
    reasons = {e["reason"] for e in events(world) if e["involvedObject"]["kind"] == "Pod"}
    assert {"LaunchFailed"} <= reasons
    messages = " ".join(e["message"] for e in events(world, "LaunchFailed"))
    assert "InsufficientCapacity" in messages
    assert world.store.list() == ()
    assert world.metrics.total(telemetry.LAUNCH_FAILURES, Reason="InsufficientInstanceCapacity") >= 2

    world.fleet.clear()  # capacity is back: the next try after the TTL launches
    world.run_schedule(UNAVAILABLE_TTL_S + 60)
    assert len(running(world)) == 2 and no_duplicates(world)


@pytest.mark.slow
def test_a_run_killed_after_create_fleet_is_adopted_not_launched_twice(make_world: MakeWorld) -> None:
    world = make_world()
    world.fleet.crash_after_create_fleet = 1
    scale(world, 1)
    service = world.service("killed-run")
    with pytest.raises(SimulatedCrash):
        service.run_pass()
        service.run_pass()
    # A killed Lambda releases nothing: its lease runs out on its own.
    [claim] = world.store.list()
    assert claim.state == "launching" and claim.instance_id is None
    assert len(world.live_instances()) == 1

    world.invoke(timeout_s=120)  # waits out the dead run's lease, then adopts
    assert len(running(world)) == 1
    assert len(all_instances(world)) == 1, "the instance was adopted, never launched again"
    [claim] = world.store.list()
    assert claim.state == "initialized" and claim.instance_id == world.live_instances()[0]["InstanceId"]


@pytest.mark.slow
def test_an_instance_no_claim_owns_whose_node_registered_is_readopted_not_terminated(
    make_world: MakeWorld,
) -> None:
    """The record is lost but the instance joined the cluster: it may run pods, so it is never collected as
    an orphan; its claim is rebuilt from its tags and its Node (removing it is the planner's job, by drain)."""
    world = make_world()
    world.fleet.crash_after_create_fleet = 1
    scale(world, 1)
    with pytest.raises(SimulatedCrash):
        world.service("killed-run").run_pass()
    [lost] = world.live_instances()
    world.store.delete(world.store.list()[0].id)  # the record is lost too,
    scale(world, 0)  # and the pod is gone, so no new claim for it will adopt the instance
    world.lease.release(LEASE_NAME, "killed-run")

    world.run_schedule(REGISTRATION_TIMEOUT_S + 90)
    states = {i["InstanceId"]: i["State"]["Name"] for i in all_instances(world)}
    assert states[lost["InstanceId"]] == "running"
    assert world.metrics.total(telemetry.ORPHANS_TERMINATED) == 0
    assert world.store.by_instance(lost["InstanceId"]) is not None


def test_a_lost_record_is_adopted_by_the_next_claim_for_the_same_pods(make_world: MakeWorld) -> None:
    world = make_world()
    world.fleet.crash_after_create_fleet = 1
    scale(world, 1)
    with pytest.raises(SimulatedCrash):
        world.service("killed-run").run_pass()
    [lost] = world.live_instances()
    world.store.delete(world.store.list()[0].id)
    world.lease.release(LEASE_NAME, "killed-run")

    world.invoke(timeout_s=90)
    assert [i["InstanceId"] for i in all_instances(world)] == [lost["InstanceId"]]
    assert len(running(world)) == 1


def test_two_runs_at_once_only_one_acts(make_world: MakeWorld) -> None:
    world = make_world()
    scale(world, 3)
    first, second = world.service("run-a"), world.service("run-b")
    acted = first.run_pass()
    waited = second.run_pass()

    assert acted.status == "planned" and acted.launched
    assert waited.status == "lease-held" and not waited.launches
    launched = len(world.live_instances())
    world.sleep(5)
    assert second.run_pass().status == "lease-held"
    first.release()
    assert second.run_pass().status in ("settled", "planned", "idle")
    assert len(world.live_instances()) == launched and no_duplicates(world)


def test_pods_no_pool_can_satisfy_get_a_reason_and_the_rest_are_provisioned(make_world: MakeWorld) -> None:
    world = make_world()
    world.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "giant", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "900"}}}]},
        }
    )
    world.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "arm-only", "namespace": "default"},
            "spec": {
                "nodeSelector": {"kubernetes.io/arch": "arm64"},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
    )
    scale(world, 2)
    world.invoke(timeout_s=90)

    assert {p["metadata"]["name"] for p in unbound(world)} == {"giant", "arm-only"}
    assert len(running(world)) == 2
    failed = {e["involvedObject"]["name"]: e["message"] for e in events(world, "FailedScheduling")}
    assert set(failed) == {"giant", "arm-only"}
    assert all(
        message.startswith("Failed to schedule pod, ") and len(message) > 30 for message in failed.values()
    )


@pytest.mark.slow
def test_an_instance_that_never_registers_is_terminated_after_15_minutes_and_replaced(
    make_world: MakeWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world()
    kubelet = world.cluster.kubelet
    boot = kubelet._register
    broken: list[str] = []

    def register_all_but_the_first(instance_id: str) -> None:
        if not broken:
            broken.append(instance_id)  # this instance's kubelet never comes up
            return
        boot(instance_id)

    monkeypatch.setattr(kubelet, "_register", register_all_but_the_first)
    scale(world, 1)
    settings = ProvisionerSettings(poll_s=5.0)
    for _ in range(9):  # 9 invocations of 2 minutes: past the 15 minute registration timeout
        world.invoke(timeout_s=120, settings=settings)

    [instance_id] = broken
    states = {i["InstanceId"]: i["State"]["Name"] for i in all_instances(world)}
    assert states[instance_id] in ("shutting-down", "terminated")
    assert world.metrics.total(telemetry.REGISTRATION_TIMEOUTS) == 1
    assert len(running(world)) == 1, "a replacement was launched and the pod runs there"
    [claim] = world.store.list()
    assert claim.instance_id != instance_id and claim.state == "initialized"
    assert world.clock.now() - world.fleet_request_times[0] >= REGISTRATION_TIMEOUT_S


def test_the_worlds_direct_reading_of_live_instances_matches_describe_instances(
    make_world: MakeWorld,
) -> None:
    world = make_world()
    scale(world, 5)
    world.invoke(timeout_s=90)
    first, *_ = [i["InstanceId"] for i in world.live_instances()]
    world.ec2_reader.terminate_instances(InstanceIds=[first])

    described = sorted(i["InstanceId"] for i in world.live_instances())
    assert described and first not in described
    assert sorted(world.live_instance_ids()) == described
    for instance in world.live_instances():
        observed = world.observed_instance(instance["InstanceId"])
        assert observed["InstanceType"] == instance["InstanceType"]
        assert observed.get("InstanceLifecycle") == instance.get("InstanceLifecycle")
        assert observed["Placement"]["AvailabilityZone"] == instance["Placement"]["AvailabilityZone"]
        tags = sorted((t["Key"], t["Value"]) for t in instance["Tags"])
        assert sorted((t["Key"], t["Value"]) for t in observed["Tags"]) == tags
        claim = dict(tags)["karpenter.sh/nodeclaim"]
        assert world.live_instance_ids("karpenter.sh/nodeclaim", claim) == [instance["InstanceId"]]
