"""Scenario steps played on the simulated world: workload changes, faults, events, EC2 reclaims and rotations.

Rules:
- A step acts through the world's public seams only (the emulator's store, moto, the queue, the Step Functions
  simulator), never through Longshore's functions, so every effect reaches them as it would in production.
- A step that finds no node to act on raises `ScenarioError`; with `lenient_steps` (chaos runs) it is noted
  and skipped instead.
- A spot interruption warning makes EC2 terminate the warned instance `reclaimAfter` seconds later if it is
  still running, through a client Longshore does not use; the warned node is judged then: no evictable pod
  left, and every controller that had pods there has all its replicas Running elsewhere (`Warned`).
- An event file's instance ids and timestamps are rewritten to the chosen nodes and the virtual clock
  (`substitute_instances`, `retime`); one event is sent per group of as many nodes as the file names.
- The interruption queue is polled within a second of a delivery, then every second while it holds messages.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from longshore.core.claims import instance_id_of
from longshore.core.commands import RotationRequest
from longshore_sim.aws import SimulatedCrash
from longshore_sim.cluster.health import set_condition
from longshore_sim.config_change import changed_text, parse
from longshore_sim.kubeapi.meta import labels_of, metadata
from longshore_sim.manifest_reads import is_daemon_pod, is_running, node_of
from longshore_sim.scenario import ConfigChange, ScenarioError, Step

if TYPE_CHECKING:
    from longshore_sim.runner import ScenarioRunner

JSON = Any
SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")
_RFC1123 = re.compile(r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$")
_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8}(?:[0-9a-f]{9})?\b")


@dataclass
class Warned:
    """A node named by a spot interruption warning, and what became of it (times from the scenario's start)."""

    node: str
    instance_id: str
    warned_at: float
    reclaim_at: float
    pods_at_warning: int
    owners: list[str]  # "namespace/Kind/name" of the controllers of its pods at the warning
    evicted_and_running: bool | None = None
    reclaimed_running: bool = False


class StepPlayer:
    """Plays one run's steps (module docstring); keeps the warned nodes, the rotations and the queue's poll."""

    def __init__(self, runner: ScenarioRunner) -> None:
        self.runner = runner
        self.warnings: list[Warned] = []
        self.rotations: list[str] = []
        self._crash_before_launch = 0
        self._poll_at: float | None = None

    def apply(self, step: Step) -> None:
        try:
            self._apply_step_now(step)
        except ScenarioError as error:
            if not self.runner.lenient_steps:
                raise
            self.runner.obs.notes.append(f"t={step.at:g}s: {step.action} skipped: {error}")

    def _apply_step_now(self, step: Step) -> None:
        world = self.runner.world
        note = f"t={step.at:g}s: {step.note or step.action}"
        if step.scale is not None:
            scale = step.scale
            current = world.cluster.store.try_get("deployments", scale.deployment, scale.namespace)
            if current is None:
                raise ScenarioError(
                    f"{self.runner.scenario.source}: steps (at {step.at:g}s): scale: no Deployment "
                    f"{scale.namespace}/{scale.deployment}"
                )
            if scale.replicas < int((current.get("spec") or {}).get("replicas") or 0):
                self.runner.checker.expect_removals(scale.namespace, scale.deployment)
            world.cluster.scale(scale.deployment, scale.replicas, scale.namespace)
            note = f"t={step.at:g}s: scale {scale.namespace}/{scale.deployment} to {scale.replicas}"
        elif step.delete is not None:
            self.runner.checker.expect_removals(step.delete.namespace, step.delete.deployment)
            world.cluster.store.delete("deployments", step.delete.deployment, step.delete.namespace)
            note = f"t={step.at:g}s: delete {step.delete.namespace}/{step.delete.deployment}"
        elif step.apply is not None:
            created: list[str] = []
            for relative in step.apply.files:
                created += world.apply_file(self.runner.scenario.resolve(relative))
            note = f"t={step.at:g}s: apply {', '.join(created)}"
        elif step.unavailable is not None:
            note = self._make_unavailable(step)
        elif step.reservation is not None:
            world.reservations.expire(
                step.reservation.id, "expired" if step.reservation.action == "expire" else "cancelled"
            )
            note = f"t={step.at:g}s: capacity reservation {step.reservation.id} " + (
                "expired" if step.reservation.action == "expire" else "cancelled"
            )
        elif step.crash is not None:
            if step.crash.point == "workflow-step-after-work":
                world.step_crashes += step.crash.times
                note = f"t={step.at:g}s: the next {step.crash.times} workflow step(s) crash after their work"
            else:
                if step.crash.point == "after-launch-before-record":
                    world.fleet.crash_after_create_fleet += 1
                else:
                    self._crash_before_launch += 1
                note = f"t={step.at:g}s: the next launch crashes the provisioner ({step.crash.point})"
        elif step.event is not None:
            note = self._deliver_event(step)
        elif step.rotate is not None:
            note = self._start_rotation(step)
        elif step.delete_node is not None:
            names = [
                str(metadata(n).get("name"))
                for n in self._choose_nodes(step.delete_node.nodes, step.delete_node.selector, "deleteNode")
            ]
            for name in names:
                world.cluster.store.delete("nodes", name)
            note = f"t={step.at:g}s: kubectl delete node {' '.join(names)}"
        elif step.node_health is not None:
            health = step.node_health
            names = [
                str(metadata(n).get("name"))
                for n in self._choose_nodes(health.nodes, health.selector, "nodeHealth")
            ]
            for name in names:
                set_condition(world.cluster.store, name, health.condition, health.status, world.clock.now())
            note = f"t={step.at:g}s: {health.condition}={health.status} on {' '.join(names)}"
        elif step.api_faults is not None:
            spec = step.api_faults
            fault = world.cluster.emulator.faults.add(
                resource=spec.resource, verb=spec.verb, status=spec.status
            )
            world.clock.call_at(
                world.clock.now() + spec.duration, lambda: world.cluster.emulator.faults.remove(fault)
            )
            note = f"t={step.at:g}s: the Kubernetes API answers {spec.status} for {spec.duration:g}s"
        elif step.api_timeouts is not None:
            note = self._time_out_api(step)
        elif step.dynamo_throttle is not None:
            throttle = step.dynamo_throttle
            for operation in throttle.operations:
                world.dynamo_throttle.throttle(operation, throttle.times)
            note = (
                f"t={step.at:g}s: DynamoDB throttles the next {throttle.times} call(s) of "
                f"{', '.join(throttle.operations)}"
            )
        elif step.lose_claim_table is not None:
            note = f"t={step.at:g}s: the claim table lost all {world.lose_claim_table()} of its items"
        elif step.config is not None:
            note = f"t={step.at:g}s: the cluster config changed: {self._change_config(step.config)}"
        elif step.cold_start is not None:
            world.cold_start_planner()
            note = f"t={step.at:g}s: the planner's container is replaced (cold start)"
        elif step.ami is not None:
            published = world.publish_amis(step.ami.release)
            self.runner.planner.ami_changed()
            note = f"t={step.at:g}s: new AMI release {step.ami.release} ({len(published)} SSM parameters updated)"
        self.runner.obs.notes.append(note)
        self.runner.planner.poke()

    def _time_out_api(self, step: Step) -> str:
        spec = step.api_timeouts
        assert spec is not None
        world = self.runner.world
        faults = world.cluster.emulator.faults
        world.time_out_kube_api()
        fault = faults.add(resource=spec.resource, verb=spec.verb, timeout=True, served=spec.served)
        world.clock.call_at(world.clock.now() + spec.duration, lambda: faults.remove(fault))
        served = ", served but unanswered" if spec.served else ""
        return f"t={step.at:g}s: Kubernetes API requests time out{served} for {spec.duration:g}s"

    def _change_config(self, change: ConfigChange) -> str:
        """Publish the changed config to the SSM parameter; the checker judges later decisions against it."""
        world = self.runner.world
        text, what = changed_text(
            world.config_text or "",
            self.runner.first_config_text,
            change,
            self.runner.scenario.resolve,
            self.runner.config,
        )
        self.runner.config = parse(text, self.runner.config)
        world.publish_config(text)
        self.runner.checker.config_published(world.clock.now(), self.runner.config)
        return what

    # -- interruption events, EC2 reclaims, rotations ---------------------------------------------------------

    def _choose_nodes(self, chosen: int | list[str], selector: Mapping[str, str], where: str) -> list[JSON]:
        """Nodes for a step: the named ones, or the `chosen` oldest (then by name) matching `selector`."""
        nodes = [
            n
            for n in self.runner.world.cluster.store.view("nodes")
            if all(labels_of(n).get(k) == v for k, v in selector.items())
            and instance_id_of(str((n.get("spec") or {}).get("providerID") or ""))
        ]
        if isinstance(chosen, list):
            by_name = {str(metadata(n).get("name")): n for n in nodes}
            missing = [name for name in chosen if name not in by_name]
            if missing:
                raise ScenarioError(
                    f"{self.runner.scenario.source}: {where}: nodes: no such node {missing[0]!r}"
                )
            return [by_name[name] for name in chosen]
        ordered = sorted(
            nodes, key=lambda n: (str(metadata(n).get("creationTimestamp")), str(metadata(n).get("name")))
        )
        if len(ordered) < chosen:
            raise ScenarioError(
                f"{self.runner.scenario.source}: {where}: nodes: {chosen} asked for, only {len(ordered)} node(s) match"
            )
        return ordered[:chosen]

    def _deliver_event(self, step: Step) -> str:
        spec = step.event
        assert spec is not None
        world = self.runner.world
        where = f"steps (at {step.at:g}s): event"
        path = self.runner.scenario.resolve(spec.file)
        try:
            template = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ScenarioError(
                f"{self.runner.scenario.source}: {where}: file: cannot read {spec.file!r}: {error}"
            ) from error
        nodes = self._choose_nodes(spec.nodes, spec.selector, where)
        instance_ids = [instance_id_of(str((n.get("spec") or {}).get("providerID"))) or "" for n in nodes]
        # One event per group of as many nodes as the file names instances (a spot warning names one).
        per_event = max(1, len(instance_ids_in(template)))
        groups = [instance_ids[i : i + per_event] for i in range(0, len(instance_ids), per_event)] or [[]]
        events = [retime(substitute_instances(template, group), world.clock.now()) for group in groups]
        for event in events:
            for _ in range(spec.copies):
                world.send_event(event)
        self._schedule_poll()
        event = events[0]
        names = [str(metadata(n).get("name")) for n in nodes]
        if event.get("detail-type") == SPOT_WARNING:
            for name, instance_id in zip(names, instance_ids, strict=True):
                self._warn(name, instance_id, spec.reclaim_after)
        ids = (
            ", ".join(f"{n} ({i})" for n, i in zip(names, instance_ids, strict=True))
            or "the file's instances"
        )
        copies = f" x{spec.copies}" if spec.copies > 1 else ""
        return f"t={step.at:g}s: EventBridge delivers {event.get('detail-type')}{copies} for {ids}"

    def _warn(self, node: str, instance_id: str, reclaim_after: float) -> None:
        if any(w.instance_id == instance_id for w in self.warnings):
            return  # a repeated warning: the instance is still reclaimed when the first one said
        world = self.runner.world
        now = world.clock.now()
        pods = [
            p
            for p in world.cluster.store.view("pods")
            if node_of(p) == node and not is_daemon_pod(p) and not metadata(p).get("deletionTimestamp")
        ]
        owners = sorted({_owner(p) for p in pods if _owner(p)})
        warned = Warned(
            node,
            instance_id,
            now - self.runner.start,
            now + reclaim_after - self.runner.start,
            len(pods),
            owners,
        )
        self.warnings.append(warned)
        world.clock.call_at(now + reclaim_after, functools.partial(self._reclaim, warned))

    def _reclaim(self, warned: Warned) -> None:
        """EC2 takes the spot capacity back: terminate the instance if it still runs; judge the warned node."""
        world = self.runner.world
        found = world.ec2_reader.describe_instances(InstanceIds=[warned.instance_id])["Reservations"]
        state = found[0]["Instances"][0]["State"]["Name"] if found else "terminated"
        now = world.clock.now()
        warned.evicted_and_running = self._evicted_and_running(warned)
        if state in ("pending", "running"):
            self.runner.checker.note_termination(warned.node, warned.instance_id, now, "EC2 reclaim")
            world.ec2_reader.terminate_instances(InstanceIds=[warned.instance_id])
            world.cluster.sync_ec2()
            if self.runner.counters.live_prices.pop(warned.instance_id, None) is not None:
                self.runner.obs.nodes_terminated += 1
            warned.reclaimed_running = True
            self.runner.obs.notes.append(
                f"t={self.runner.elapsed():g}s: EC2 reclaimed {warned.instance_id} (node {warned.node})"
            )
        self.runner.planner.poke()

    def _evicted_and_running(self, warned: Warned) -> bool:
        """No evictable pod left on the node, and every controller that had pods there has all its replicas
        Running on other nodes."""
        store = self.runner.world.cluster.store
        pods = store.view("pods")
        if any(
            node_of(p) == warned.node and not is_daemon_pod(p) and not metadata(p).get("deletionTimestamp")
            for p in pods
        ):
            return False
        for owner in warned.owners:
            namespace, kind, name = owner.split("/", 2)
            plural = {"ReplicaSet": "replicasets", "StatefulSet": "statefulsets"}.get(kind)
            controller = store.try_get(plural, name, namespace) if plural else None
            wanted = int(((controller or {}).get("spec") or {}).get("replicas") or 0)
            running = sum(
                1 for p in pods if _owner(p) == owner and is_running(p) and node_of(p) != warned.node
            )
            if running < wanted:
                return False
        return True

    def _schedule_poll(self, delay: float = 1.0) -> None:
        """The event source mapping polls within a second; while the queue holds messages, every second."""
        clock = self.runner.world.clock
        at = self.runner.start + math.floor(clock.now() - self.runner.start) + delay
        if self._poll_at is not None and self._poll_at <= at:
            return
        self._poll_at = at
        clock.call_at(at, self._poll)

    def _poll(self) -> None:
        if self._poll_at is None or self.runner.world.clock.now() < self._poll_at:
            return  # superseded by an earlier poll
        self._poll_at = None
        self.runner.counters.queue_polls += 1
        self.runner.counters.messages += self.runner.world.poll_queue()
        if self.runner.world.queue_depth() > 0:
            self._schedule_poll()
        self.runner.planner.poke()

    def _start_rotation(self, step: Step) -> str:
        spec = step.rotate
        assert spec is not None
        world = self.runner.world
        nodes = self._choose_nodes(spec.nodes, spec.selector, f"steps (at {step.at:g}s): rotate")
        request = RotationRequest(
            nodes=tuple(str(metadata(n).get("name")) for n in nodes),
            max_unavailable=spec.max_unavailable,
            surge=spec.surge,
            canary=spec.canary,
            drain_seconds=spec.drain_seconds,
            requested_at=float(int(world.clock.now())),
        )
        result = world.workflows.start_rotation(request)
        self.rotations.append(result.execution_name)
        return (
            f"t={step.at:g}s: rotation {result.execution_name} of {', '.join(request.nodes)} "
            f"(max unavailable {request.max_unavailable})"
        )

    def _make_unavailable(self, step: Step) -> str:
        spec = step.unavailable
        assert spec is not None
        world = self.runner.world
        zones = spec.zones or list(world.zones)
        kinds = ("spot", "on-demand") if spec.capacity_type == "any" else (spec.capacity_type,)
        keys = [(t, z, c) for t in spec.instance_types for z in zones for c in kinds]
        for key in keys:
            world.fleet.make_unavailable(*key, code=spec.error_code)
        if spec.duration is not None:

            def restore() -> None:
                for key in keys:
                    world.fleet.make_available(*key)
                self.runner.obs.notes.append(
                    f"t={self.runner.elapsed():g}s: capacity is back for {', '.join(spec.instance_types)}"
                )

            world.clock.call_later(spec.duration, restore)
        return (
            f"t={step.at:g}s: {spec.error_code} for {', '.join(spec.instance_types)} ({'/'.join(kinds)}) in "
            f"{', '.join(zones)}" + (f" for {spec.duration:g}s" if spec.duration is not None else "")
        )

    def maybe_crash_before_launch(self, **_: Any) -> None:
        if self._crash_before_launch > 0:
            self._crash_before_launch -= 1
            raise SimulatedCrash("simulated crash before CreateFleet was sent")


def _owner(pod: Mapping[str, Any]) -> str:
    """`namespace/Kind/name` of the pod's controller ("" for a bare pod)."""
    meta = metadata(pod)
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller", True):
            return f"{meta.get('namespace') or 'default'}/{ref.get('kind')}/{ref.get('name')}"
    return ""


def instance_ids_in(event: JSON) -> list[str]:
    """The distinct instance ids an event names, in order of first appearance."""
    order: list[str] = []
    for found in _INSTANCE_ID.findall(json.dumps(event)):
        if found not in order:
            order.append(found)
    return order


def substitute_instances(event: JSON, instance_ids: list[str]) -> JSON:
    """The event with its k-th distinct instance id replaced by `instance_ids[k]` (the rest unchanged)."""
    text = json.dumps(event)
    mapping = dict(zip(instance_ids_in(event), instance_ids, strict=False))
    return json.loads(_INSTANCE_ID.sub(lambda m: mapping.get(m.group(0), m.group(0)), text))


def retime(event: JSON, now: float) -> JSON:
    """The event with every timestamp moved so that its `time` is `now` (ISO 8601 `Z` and RFC 1123 forms)."""
    sent = (
        datetime.fromisoformat(str(event.get("time", "")).replace("Z", "+00:00"))
        if event.get("time")
        else None
    )
    delta = now - sent.timestamp() if sent is not None else 0.0

    def move(value: JSON) -> JSON:
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        if isinstance(value, list):
            return [move(v) for v in value]
        if isinstance(value, str) and _ISO.match(value):
            moved = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() + delta
            return datetime.fromtimestamp(moved, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if isinstance(value, str) and _RFC1123.match(value):
            moved = parsedate_to_datetime(value).timestamp() + delta
            return format_datetime(datetime.fromtimestamp(moved, UTC), usegmt=True)
        return value

    return move(event)
