"""Launching claims against moto: what exists afterwards (instances, tags, records, unavailable offerings).

Matrix: a plain launch (instance, tags on instance and fleet, record, user data the node will read, subnet of
the zone, cheapest pool); launch templates shared and recreated; at most 60 overrides per call, cheapest first;
capacity errors on the cheapest pools (fallback in the same run), on every spot pool (on-demand fallback), on
every pool (failure, claim forgotten, no EC2 call while the TTL runs, success after it); throttling (absorbed by
botocore, then by our own backoff, then a clean failure); a crash between CreateFleet and the record (retry
during the attempt lease does nothing, after it adopts); two launches of the same claim at once (one instance);
a takeover while the first run's CreateFleet outlives the attempt lease (one instance, the stale run makes no
further call and neither overwrites nor deletes the new owner's record; a refused repeated token waits).
"""

from __future__ import annotations

import threading
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import botocore.endpoint
import pytest
from botocore.exceptions import ClientError

from longshore.adapters.aws import tags as tagnames
from longshore.adapters.aws.userdata import parse_bootstrap
from longshore.core.claims import LAUNCH_ATTEMPT_LEASE_S, KubeletSettings, LaunchOption, NodeClaim
from longshore.core.model import SelectorTerm
from longshore.core.offerings import UNAVAILABLE_TTL_S
from longshore_sim.aws import SimulatedCrash
from tests.adapters.conftest import CLUSTER, ZONES, World, cluster_config, node_class, options, request

NOW = 1_000_000.0


@pytest.fixture(autouse=True)
def botocore_retry_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's own retry backoff, recorded instead of slept (its logic runs unchanged)."""
    slept: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=slept.append))
    return slept


def _tags(item: dict[str, Any]) -> dict[str, str]:
    return tagnames.from_ec2(item.get("Tags"))


def _user_data(world: World, instance_id: str) -> str:
    attribute = world.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")  # type: ignore[attr-defined]
    return str(attribute["UserData"]["Value"])


@pytest.mark.slow
def test_launch_creates_one_tagged_instance_and_records_the_claim(world: World) -> None:
    req = request()
    result = world.launcher().launch(req, NOW)

    assert result.status == "launched"
    [instance] = world.live_instances()
    assert instance["InstanceId"] == result.instance_id
    assert (instance["InstanceType"], instance["Placement"]["AvailabilityZone"]) == ("c5.large", "us-east-1a")
    assert instance["SubnetId"] == world.seeded.subnets["us-east-1a"]
    assert instance["InstanceLifecycle"] == "spot"
    assert instance["ImageId"] == world.seeded.images[("AL2023", "x86_64", "")]
    tags = _tags(instance)
    assert tags[tagnames.CLUSTER] == CLUSTER and tags[tagnames.EKS_CLUSTER] == CLUSTER
    assert tags[tagnames.NODEPOOL] == "default" and tags[tagnames.NODECLASS] == "default"
    assert tags[tagnames.NODECLAIM] == req.claim.id and tags["Name"] == f"default/{req.claim.id}"

    [fleet] = world.ec2.describe_fleets()["Fleets"]  # type: ignore[attr-defined]
    assert _tags(fleet)[tagnames.NODECLAIM] == req.claim.id
    assert fleet["SpotOptions"]["AllocationStrategy"] == "price-capacity-optimized"
    assert fleet["Type"] == "instant"

    record = world.store.get(req.claim.id)
    assert record is not None and record.state == "launched"
    assert (record.instance_id, record.instance_type, record.zone, record.capacity_type) == (
        result.instance_id,
        "c5.large",
        "us-east-1a",
        "spot",
    )
    assert record.provider_id == f"aws:///us-east-1a/{result.instance_id}"
    assert record.price == pytest.approx(0.031)
    assert record.launched_at == NOW

    node = parse_bootstrap(_user_data(world, str(result.instance_id)))
    assert dict(node.labels)["karpenter.sh/capacity-type"] == "spot"
    assert dict(node.labels)["app"] == "web" and dict(node.labels)["team"] == "web"
    assert ("karpenter.sh/unregistered", "NoExecute") in [(t.key, t.effect) for t in node.taints]
    assert node.max_pods == 29
    assert [m.name for m in result.metrics] == ["NodeClaimsCreated"]


def test_on_demand_launch_uses_lowest_price(world: World) -> None:
    result = world.launcher().launch(request(opts=options(capacity_types=("on-demand",))), NOW)
    [fleet] = world.ec2.describe_fleets()["Fleets"]  # type: ignore[attr-defined]
    assert fleet["OnDemandOptions"]["AllocationStrategy"] == "lowest-price"
    assert (result.claim.instance_type, result.claim.capacity_type) == ("c5.large", "on-demand")  # type: ignore[union-attr]
    assert world.live_instances()[0].get("InstanceLifecycle") != "spot"


@pytest.mark.slow
def test_launch_templates_are_shared_and_recreated_when_deleted(world: World) -> None:
    launcher = world.launcher()
    first = launcher.launch(request(pods=("default/a",)), NOW)
    second = launcher.launch(request(pods=("default/b",)), NOW)
    assert first.claim.launch_template == second.claim.launch_template  # type: ignore[union-attr]
    assert len(launcher.fleet.templates.owned()) == 1
    world.ec2.delete_launch_template(LaunchTemplateName=first.claim.launch_template)  # type: ignore[attr-defined, union-attr]
    third = launcher.launch(request(pods=("default/c",)), NOW)
    assert third.status == "launched"
    assert len(launcher.fleet.templates.owned()) == 1
    assert len(world.live_instances()) == 3


@pytest.mark.slow
def test_unused_launch_templates_are_collected_after_the_grace(world: World) -> None:
    launcher = world.launcher()
    result = launcher.launch(request(), NOW)
    name = str(result.claim.launch_template)  # type: ignore[union-attr]
    assert launcher.fleet.templates.collect_unused({name}, NOW + 3600) == ()
    assert launcher.fleet.templates.collect_unused(set(), NOW + 10) == (), "too young to collect"
    assert launcher.fleet.templates.collect_unused(set(), NOW + 3600) == (name,)
    assert launcher.fleet.templates.owned() == ()


@pytest.mark.slow
def test_at_most_sixty_overrides_per_call_cheapest_first(world: World) -> None:
    many = tuple(
        LaunchOption(
            f"m{n}.large", zone, "spot", 0.01 + n * 0.001 + z * 0.0001, kubelet=KubeletSettings(max_pods=29)
        )
        for n in range(34)
        for z, zone in enumerate(ZONES)
    )
    for option in many[:60]:
        world.fleet.make_unavailable(option.instance_type, option.zone, "spot")
    result = world.launcher().launch(request(opts=many), NOW)

    assert result.status == "launched"
    assert result.fleet_calls == 2
    assert [(f.instance_type, f.zone) for f in result.failures] == [
        (o.instance_type, o.zone) for o in many[:60]
    ]
    assert (result.claim.instance_type, result.claim.zone) == (many[60].instance_type, many[60].zone)  # type: ignore[union-attr]


def test_capacity_errors_on_the_cheapest_pools_fall_back_in_the_same_run(world: World) -> None:
    for zone in ZONES:
        world.fleet.make_unavailable("c5.large", zone, "spot")
    result = world.launcher().launch(request(), NOW)

    assert result.status == "launched"
    assert (result.claim.instance_type, result.claim.capacity_type) == ("m5.large", "spot")  # type: ignore[union-attr]
    assert world.offerings.unavailable(NOW) == {("c5.large", z, "spot") for z in ZONES}
    assert world.offerings.unavailable(NOW + UNAVAILABLE_TTL_S) == frozenset()
    assert len(world.live_instances()) == 1
    assert sorted(m.name for m in result.metrics) == ["LaunchFailures"] * 3 + ["NodeClaimsCreated"]


@pytest.mark.slow
def test_when_every_spot_pool_is_exhausted_the_claim_launches_on_demand(world: World) -> None:
    for option in options(capacity_types=("spot",)):
        world.fleet.make_unavailable(option.instance_type, option.zone, "spot")
    result = world.launcher().launch(request(), NOW)
    assert (result.status, result.claim.capacity_type, result.claim.instance_type) == (
        "launched",
        "on-demand",
        "c5.large",
    )  # type: ignore[union-attr]


@pytest.mark.slow
def test_capacity_errors_on_every_pool_leave_the_pods_pending_without_a_tight_loop(world: World) -> None:
    for option in options():
        world.fleet.make_unavailable(option.instance_type, option.zone, option.capacity_type)
    launcher = world.launcher()
    req = request()

    failed = launcher.launch(req, NOW)
    assert (failed.status, failed.reason) == ("failed", "InsufficientCapacity")
    assert world.store.get(req.claim.id) is None, "the claim is forgotten so its pods are planned again"
    assert world.live_instances() == []
    assert world.offerings.unavailable(NOW) == {o.key for o in options()}

    calls = world.fleet.calls
    again = launcher.launch(req, NOW + 10)
    assert (again.status, again.reason, again.fleet_calls) == ("failed", "InsufficientCapacity", 0)
    assert world.fleet.calls == calls, "no CreateFleet while every offering is known unavailable"

    world.fleet.clear()
    after_ttl = launcher.launch(req, NOW + UNAVAILABLE_TTL_S + 1)
    assert after_ttl.status == "launched"
    assert len(world.live_instances()) == 1


def test_throttling_is_absorbed_by_botocore_retries(world: World, botocore_retry_sleeps: list[float]) -> None:
    world.throttle.throttle("CreateFleet", 2)
    result = world.launcher().launch(request(), NOW)
    assert result.status == "launched"
    assert world.throttle.injected["CreateFleet"] == 2
    assert len(botocore_retry_sleeps) == 2 and world.sleeps == []
    assert len(world.live_instances()) == 1


def test_throttling_beyond_botocore_is_retried_with_our_bounded_backoff(
    world: World, botocore_retry_sleeps: list[float]
) -> None:
    world.throttle.throttle("CreateFleet", 6)  # botocore gives up after 4 attempts; we sleep and call again
    result = world.launcher().launch(request(), NOW)
    assert result.status == "launched"
    assert world.sleeps == [1.0]
    assert len(botocore_retry_sleeps) == 3 + 2, "3 retries in the first round, 2 in ours"
    assert len(world.live_instances()) == 1


@pytest.mark.slow
def test_persistent_throttling_fails_the_claim_cleanly(world: World) -> None:
    world.throttle.throttle("CreateFleet", 1000)
    req = request()
    result = world.launcher().launch(req, NOW)
    assert (result.status, result.reason) == ("failed", "RequestLimitExceeded")
    assert world.sleeps == [1.0, 2.0, 4.0, 8.0]
    assert world.store.get(req.claim.id) is None
    assert world.live_instances() == []


@pytest.mark.slow
def test_crash_after_create_fleet_never_duplicates_and_the_instance_is_adopted(world: World) -> None:
    req = request()
    world.fleet.crash_after_create_fleet = 1
    with pytest.raises(SimulatedCrash):
        world.launcher().launch(req, NOW)
    [instance] = world.live_instances()
    stranded = world.store.get(req.claim.id)
    assert stranded is not None and stranded.state == "launching" and stranded.instance_id is None

    during_lease = world.launcher().launch(req, NOW + 5)
    assert during_lease.status == "in_progress"

    after_lease = world.launcher().launch(req, NOW + LAUNCH_ATTEMPT_LEASE_S + 1)
    assert after_lease.status == "adopted"
    assert after_lease.instance_id == instance["InstanceId"]
    assert len(world.live_instances()) == 1
    record = world.store.get(req.claim.id)
    assert record is not None and (record.state, record.instance_id) == ("launched", instance["InstanceId"])

    assert world.launcher().launch(req, NOW + 600).status == "exists"
    assert len(world.live_instances()) == 1


@pytest.mark.slow
def test_a_second_launch_of_the_same_claim_during_create_fleet_does_nothing(world: World) -> None:
    req = request()
    second: list[Any] = []
    fired = threading.Event()

    def launch_again_while_the_first_is_in_create_fleet(**_: Any) -> None:
        if not fired.is_set():
            fired.set()
            second.append(world.launcher().launch(req, NOW + 1))

    world.ec2.meta.events.register(
        "before-parameter-build.ec2.CreateFleet", launch_again_while_the_first_is_in_create_fleet
    )  # type: ignore[attr-defined]
    first = world.launcher().launch(req, NOW)

    assert first.status == "launched"
    assert second[0].status == "in_progress"
    assert len(world.live_instances()) == 1


@pytest.mark.slow
def test_two_threads_launching_the_same_claim_make_one_instance(world: World) -> None:
    req = request()
    barrier = threading.Barrier(2)

    def launch(_: int) -> str:
        launcher = world.launcher()
        barrier.wait()
        return launcher.launch(req, NOW).status

    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = sorted(pool.map(launch, range(2)))

    assert statuses.count("launched") == 1
    assert set(statuses) - {"launched"} <= {"in_progress", "exists"}
    assert len(world.live_instances()) == 1


@pytest.mark.slow
def test_a_repeated_client_token_returns_the_first_answer_without_launching(world: World) -> None:
    req = request()
    result = world.launcher().launch(req, NOW)
    [template] = world.launcher().fleet.templates.owned()
    params = {
        "Type": "instant",
        "ClientToken": "longshore-fixed-token",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": template["LaunchTemplateName"],
                    "Version": "$Latest",
                },
                "Overrides": [{"InstanceType": "m5.large", "SubnetId": world.seeded.subnets["us-east-1b"]}],
            }
        ],
    }
    first = world.ec2.create_fleet(**params)  # type: ignore[attr-defined]
    repeat = world.ec2.create_fleet(**params)  # type: ignore[attr-defined]
    assert first["FleetId"] == repeat["FleetId"]
    assert first["Instances"][0]["InstanceIds"] == repeat["Instances"][0]["InstanceIds"]
    assert len(world.live_instances()) == 2
    assert result.status == "launched"


@pytest.mark.slow
def test_a_node_class_that_cannot_launch_fails_its_claim_with_a_clear_reason(world: World) -> None:
    """A node class error (here: its subnet selector matches no subnet) is one bad claim, not a crashed run."""
    bad = node_class(subnet_selector_terms=(SelectorTerm(tags=(("karpenter.sh/discovery", "nowhere"),)),))
    req = request()
    result = world.launcher(cluster_config(classes=(bad,))).launch(req, NOW)

    assert result.status == "failed"
    assert "EC2NodeClass default" in result.reason and "subnetSelectorTerms" in result.reason
    assert world.store.get(req.claim.id) is None, "the claim is forgotten so its pods are planned again"
    assert world.live_instances() == []
    assert world.launcher().launch(req, NOW).status == "launched", "a fixed node class launches the claim"


def _slow_first_create_fleet(world: World, during: Any) -> list[Any]:
    """Make the first CreateFleet "slow": before it reaches EC2, run `during()` (another run, later in time)."""
    answers: list[Any] = []

    def stall(**_: Any) -> None:
        if not answers:
            answers.append(None)
            answers[0] = during()

    # First in line: the stalled call has not reached EC2 (nor the emulator's ClientToken memory) yet.
    world.ec2.meta.events.register_first("before-parameter-build.ec2.CreateFleet", stall)  # type: ignore[attr-defined]
    return answers


@pytest.mark.slow
def test_a_takeover_during_a_launch_slower_than_the_lease_launches_one_instance(world: World) -> None:
    """Run A's CreateFleet outlives the attempt lease; run B takes the claim over and launches. One instance."""
    req = request()
    later = NOW + LAUNCH_ATTEMPT_LEASE_S + 1
    taken_over = _slow_first_create_fleet(world, lambda: world.launcher().launch(req, later))

    first = world.launcher().launch(req, NOW)

    [second] = taken_over
    assert second.status == "launched"
    [instance] = world.live_instances()
    record = world.store.get(req.claim.id)
    assert record is not None and (record.state, record.instance_id) == ("launched", instance["InstanceId"])
    assert first.status == "exists" and first.instance_id == instance["InstanceId"]


@pytest.mark.slow
def test_a_run_that_lost_its_claim_during_a_slow_launch_makes_no_further_fleet_call(world: World) -> None:
    """A's first call (every spot pool refused) outlives the lease; B takes over and launches on demand. A,
    whose claim changed under it, stops instead of launching its own on-demand fallback."""
    for option in options(capacity_types=("spot",)):
        world.fleet.make_unavailable(option.instance_type, option.zone, "spot")
    req = request()
    later = NOW + LAUNCH_ATTEMPT_LEASE_S + 1
    taken_over = _slow_first_create_fleet(world, lambda: world.launcher().launch(req, later))

    first = world.launcher().launch(req, NOW)

    [second] = taken_over
    assert (second.status, second.claim.capacity_type) == ("launched", "on-demand")  # type: ignore[union-attr]
    assert first.status in ("in_progress", "exists")
    [instance] = world.live_instances()
    record = world.store.get(req.claim.id)
    assert record is not None and (record.state, record.instance_id) == ("launched", instance["InstanceId"])


@pytest.mark.slow
def test_a_failed_run_does_not_forget_a_claim_another_run_took_over_and_launched(world: World) -> None:
    """A's slow first call is throttled to failure; meanwhile B took over and launched. A's cleanup must not
    delete B's record (the pods would be planned again: a second node)."""
    req = request()
    later = NOW + LAUNCH_ATTEMPT_LEASE_S + 1

    def b_launches_then_a_is_throttled() -> Any:
        result = world.launcher().launch(req, later)
        world.throttle.throttle("CreateFleet", 1000)
        return result

    taken_over = _slow_first_create_fleet(world, b_launches_then_a_is_throttled)
    first = world.launcher().launch(req, NOW)

    assert taken_over[0].status == "launched"
    assert first.status != "launched"
    record = world.store.get(req.claim.id)
    assert record is not None and record.instance_id == taken_over[0].instance_id
    assert len(world.live_instances()) == 1


@pytest.mark.slow
def test_a_takeover_whose_repeated_token_ec2_refuses_waits_instead_of_launching_anew(world: World) -> None:
    """The previous owner's attempt reached EC2 with other parameters (EC2 answers the repeated ClientToken with
    IdempotentParameterMismatch) and its instance is not visible yet: the claim is left `launching` for the
    lifecycle to adopt or time out, and no second instance is launched."""
    req = request()
    world.store.create_if_absent(
        NodeClaim(
            req.claim.id,
            "default",
            "default",
            state="launching",
            attempts=1,
            attempt_until=NOW - 1,
            created_at=NOW - 100,
        )
    )

    def mismatch(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "IdempotentParameterMismatch", "Message": "token reused"}}, "CreateFleet"
        )

    world.ec2.meta.events.register_first("before-call.ec2.CreateFleet", mismatch)  # type: ignore[attr-defined]
    result = world.launcher().launch(req, NOW)

    assert result.status == "in_progress"
    assert world.live_instances() == []
    record = world.store.get(req.claim.id)
    assert record is not None and (record.state, record.attempts) == ("launching", 1)
