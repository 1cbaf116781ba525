"""Node lifecycle carried out against moto and the DynamoDB store: what the claims and instances look like after.

Matrix: registration (record updated, node changes returned), initialization (only once Ready and startup
taints gone), registration timeout (instance terminated, claim forgotten), launch timeout (claim forgotten),
instance gone (claim forgotten), a crash after CreateFleet (the launching claim adopts its instance), orphans
(terminated only after the grace; an instance whose claim exists is never an orphan).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from longshore.adapters.aws.lifecycle import reconcile
from longshore.core import telemetry
from longshore.core.claims import LAUNCH_TIMEOUT_S, ORPHAN_GRACE_S, REGISTRATION_TIMEOUT_S, NodeObservation
from longshore.core.model import Taint
from longshore.sim.aws import SimulatedCrash
from tests.adapters.conftest import World, request

NOW = 2_000_000.0
UNREGISTERED = Taint("karpenter.sh/unregistered", "NoExecute")
STARTUP = Taint("example.com/agent-not-ready", "NoSchedule")


def _launched(world: World, pods: tuple[str, ...] = ("default/a",)) -> tuple[str, str]:
    result = world.launcher().launch(request(pods=pods), NOW)
    assert result.claim is not None and result.claim.provider_id is not None
    return result.claim_id, result.claim.provider_id


def _state(world: World, instance_id: str) -> str:
    reservations = world.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]  # type: ignore[attr-defined]
    return str(reservations[0]["Instances"][0]["State"]["Name"])


def test_registration_then_initialization(world: World) -> None:
    claim_id, provider = _launched(world)
    booting = NodeObservation("ip-10-0-0-1", provider, ready=False, taints=(UNREGISTERED, STARTUP))

    first = reconcile(world.store, world.instances, [booting], world.config, NOW + 30)
    assert first.actions("register") == (claim_id,)
    [registration] = first.registrations
    assert registration.node_name == "ip-10-0-0-1"
    assert registration.remove_taints == (UNREGISTERED,)
    assert ("karpenter.sh/registered", "true") in registration.labels
    assert [m.name for m in first.metrics] == [telemetry.NODES_REGISTERED]
    record = world.store.get(claim_id)
    assert record is not None and (record.state, record.node_name, record.registered_at) == (
        "registered",
        "ip-10-0-0-1",
        NOW + 30,
    )

    ready_with_startup_taint = replace(booting, ready=True, taints=(STARTUP,))
    assert (
        reconcile(world.store, world.instances, [ready_with_startup_taint], world.config, NOW + 40).decisions
        == ()
    )

    ready = replace(booting, ready=True, taints=(Taint("dedicated", "NoSchedule", "web"),))
    done = reconcile(world.store, world.instances, [ready], world.config, NOW + 50)
    assert done.actions("initialize") == (claim_id,)
    record = world.store.get(claim_id)
    assert record is not None and (record.state, record.initialized_at) == ("initialized", NOW + 50)


def test_an_instance_that_never_registers_is_terminated_and_its_claim_forgotten(world: World) -> None:
    claim_id, _ = _launched(world)
    instance_id = world.store.get(claim_id).instance_id  # type: ignore[union-attr]
    assert (
        reconcile(world.store, world.instances, [], world.config, NOW + REGISTRATION_TIMEOUT_S - 1).decisions
        == ()
    )

    report = reconcile(world.store, world.instances, [], world.config, NOW + REGISTRATION_TIMEOUT_S)
    assert report.actions("registration_timeout") == (claim_id,)
    assert report.terminated == (instance_id,)
    assert world.store.get(claim_id) is None
    assert _state(world, str(instance_id)) in ("shutting-down", "terminated")
    assert telemetry.REGISTRATION_TIMEOUTS in [m.name for m in report.metrics]


def test_a_claim_whose_instance_terminated_is_forgotten(world: World) -> None:
    claim_id, _ = _launched(world)
    world.instances.terminate([world.store.get(claim_id).instance_id])  # type: ignore[union-attr, list-item]
    report = reconcile(world.store, world.instances, [], world.config, NOW + 60)
    assert report.actions("instance_gone") == (claim_id,)
    assert world.store.get(claim_id) is None


def test_crash_after_create_fleet_the_lifecycle_adopts_the_instance(world: World) -> None:
    req = request()
    world.fleet.crash_after_create_fleet = 1
    with contextlib.suppress(SimulatedCrash):
        world.launcher().launch(req, NOW)
    [instance] = world.live_instances()

    report = reconcile(world.store, world.instances, [], world.config, NOW + ORPHAN_GRACE_S * 10)
    assert report.actions("adopt") == (req.claim.id,)
    assert report.orphans == (), "an instance whose claim exists is adopted, never collected"
    record = world.store.get(req.claim.id)
    assert record is not None and (record.state, record.instance_id) == ("launched", instance["InstanceId"])
    assert len(world.live_instances()) == 1


def test_a_launching_claim_without_an_instance_is_forgotten_after_the_launch_timeout(world: World) -> None:
    req = request()
    # a run that wrote the record and died before CreateFleet
    world.store.create_if_absent(
        replace(req.claim, state="launching", created_at=NOW, attempt_until=NOW + 60)
    )
    assert reconcile(world.store, world.instances, [], world.config, NOW + 60).decisions == ()
    report = reconcile(world.store, world.instances, [], world.config, NOW + LAUNCH_TIMEOUT_S)
    assert report.actions("launch_timeout") == (req.claim.id,)
    assert world.store.get(req.claim.id) is None


def test_orphans_are_terminated_only_after_the_grace_period(world: World) -> None:
    req = request()
    world.fleet.crash_after_create_fleet = 1
    with contextlib.suppress(SimulatedCrash):
        world.launcher().launch(req, NOW)
    world.store.delete(req.claim.id)  # the record is gone: nobody will adopt this instance
    [instance] = world.live_instances()
    kept_id, _ = _launched(world, pods=("default/kept",))

    young = reconcile(world.store, world.instances, [], world.config, NOW + ORPHAN_GRACE_S - 1)
    assert young.orphans == ()
    old = reconcile(world.store, world.instances, [], world.config, NOW + ORPHAN_GRACE_S)
    assert old.orphans == (instance["InstanceId"],)
    assert _state(world, str(instance["InstanceId"])) in ("shutting-down", "terminated")
    assert [i["InstanceId"] for i in world.live_instances()] == [world.store.get(kept_id).instance_id]  # type: ignore[union-attr]
    assert (telemetry.ORPHANS_TERMINATED, 1.0) in [(m.name, m.value) for m in old.metrics]
