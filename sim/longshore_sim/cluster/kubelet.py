"""A simulated kubelet for every EC2 instance of the cluster: register a Node after booting, start bound pods,
and take the Node away when the instance terminates.

Theory of operation: `sync_instances()` lists the instances tagged `longshore.io/cluster=<cluster>` in EC2
(moto). A new running instance is remembered with the virtual time it was first seen (or the time a launch
hook reported, which is exact) and its Node is registered `boot_delay` seconds later (default 30 s) via a
clock timer. Registration reads what a real node reads:
- the user data (through `DescribeInstanceAttribute`), parsed by the bootstrap reader into labels, taints
  (including startup taints and `karpenter.sh/unregistered`), max pods and reserved resources;
- the instance type (`DescribeInstanceTypes`) for capacity, computed independently of the engine
  (`capacity.py`), the zone and its id, the root volume size, spot or on-demand, and the `karpenter.sh/nodepool`
  tag.
The Node gets the well-known labels (hostname, instance type, zone, zone id, region, arch, os, capacity type,
node pool; bootstrap labels win), `spec.providerID = aws:///<zone>/<instance-id>`, capacity, allocatable,
addresses and a Ready condition. Startup taints whose keys are in `startup_taint_keys` (agents such as Cilium
or the EBS CSI driver remove theirs) disappear `startup_taint_delay` seconds after registration.

Pods bound to a Ready node become Running and Ready `pod_start_delay` seconds after the kubelet first sees them
bound (the same for statically created nodes). When an instance is shutting down or terminated, its Node is
deleted (finalizers, such as Karpenter's, are honoured by the API) and the pods bound to it are force-deleted,
so their controllers create replacements. An instance that terminates before booting never registers; a Node
deleted while its instance still runs is not re-created (the kubelet registers once, at start).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from longshore_sim.clock import Timer, VirtualClock
from longshore_sim.cluster import matching
from longshore_sim.cluster.bootstrap import BootstrapReader, NodeBootstrap, default_reader
from longshore_sim.cluster.capacity import DEFAULT_ROOT_VOLUME_GIB, node_shape, quantities
from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.meta import JSON, metadata, rfc3339
from longshore_sim.kubeapi.store import ObjectStore

CLUSTER_TAG = "longshore.io/cluster"
NODEPOOL_TAG = "karpenter.sh/nodepool"
GONE_STATES = frozenset({"shutting-down", "terminated", "stopping", "stopped"})
AGENT_STARTUP_TAINTS = frozenset(
    {
        "node.cilium.io/agent-not-ready",
        "ebs.csi.aws.com/agent-not-ready",
        "efs.csi.aws.com/agent-not-ready",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


@dataclass
class _Instance:
    instance_id: str
    seen_at: float
    registered_node: str | None = None
    gone: bool = False
    timer: Timer | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class KubeletSettings:
    """Timings and behaviour of the simulated kubelets."""

    boot_delay: float = 30.0
    pod_start_delay: float = 0.0
    startup_taint_keys: frozenset[str] = AGENT_STARTUP_TAINTS
    startup_taint_delay: float = 5.0
    kubelet_version: str = "v1.31.0-eks"


class SimulatedKubelet:
    """Registers, runs and removes Nodes for the cluster's EC2 instances (see the module docstring)."""

    def __init__(
        self,
        store: ObjectStore,
        clock: VirtualClock,
        ec2: Any,
        cluster_name: str,
        *,
        settings: KubeletSettings | None = None,
        reader: BootstrapReader | None = None,
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.ec2 = ec2
        self.cluster_name = cluster_name
        self.settings = settings or KubeletSettings()
        self.reader = reader or default_reader()
        self.wake = wake
        self.instances: dict[str, _Instance] = {}
        self._launch_hints: dict[str, float] = {}
        self._templates: dict[str, str] = {}  # instance id -> the launch template it came from
        self.booted_templates: dict[str, dict[str, Any]] = {}  # instance id -> that template's data
        self._instance_types: dict[str, dict[str, Any]] = {}
        self._zone_ids: dict[str, str] | None = None
        self._pod_seen: dict[str, float] = {}
        self._pod_ips = itertools.count(10)

    # ------------------------------------------------------------------ instances

    def note_launch(self, instance_ids: Iterable[str], at: float, template: str | None = None) -> None:
        """Record when instances were launched (from a CreateFleet/RunInstances hook): boot starts then; and
        the launch template they came from (its network interfaces are the EFA devices the node has)."""
        for instance_id in instance_ids:
            self._launch_hints.setdefault(instance_id, at)
            if template:
                self._templates[instance_id] = template

    def template_data(self, instance_id: str) -> dict[str, Any]:
        """The `LaunchTemplateData` the instance booted from (read once; empty when unknown or deleted)."""
        if instance_id not in self.booted_templates:
            name = self._templates.get(instance_id)
            data: dict[str, Any] = {}
            if name is not None:
                try:
                    versions = self.ec2.describe_launch_template_versions(
                        LaunchTemplateName=name, Versions=["$Latest"]
                    )
                    data = (versions.get("LaunchTemplateVersions") or [{}])[0].get("LaunchTemplateData") or {}
                except Exception:  # a template deleted since: nothing is known of what it booted with
                    data = {}
            self.booted_templates[instance_id] = data
        return self.booted_templates[instance_id]

    def efa_devices(self, instance_id: str) -> int:
        """EFA devices of the instance: the `efa` / `efa-only` interfaces of the template it launched from."""
        interfaces = self.template_data(instance_id).get("NetworkInterfaces") or []
        return sum(1 for n in interfaces if n.get("InterfaceType") in ("efa", "efa-only"))

    def sync_instances(self) -> None:
        """Compare EC2 with what the kubelets know: schedule boots, remove Nodes of terminated instances."""
        now = self.clock.now()
        for instance in self._describe():
            instance_id = instance["InstanceId"]
            state = instance["State"]["Name"]
            known = self.instances.get(instance_id)
            if state in GONE_STATES:
                if known is not None and not known.gone:
                    self._gone(known)
                continue
            if known is None:
                seen_at = min(self._launch_hints.pop(instance_id, now), now)
                known = self.instances[instance_id] = _Instance(instance_id, seen_at)
                due = seen_at + self.settings.boot_delay
                known.timer = self.clock.call_at(due, functools.partial(self._register, instance_id))

    def _describe(self) -> list[dict[str, Any]]:
        paginator = self.ec2.get_paginator("describe_instances")
        filters = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [self.cluster_name]}]
        return [
            i
            for page in paginator.paginate(Filters=filters)
            for r in page["Reservations"]
            for i in r["Instances"]
        ]

    def _gone(self, record: _Instance) -> None:
        record.gone = True
        if record.timer is not None:
            record.timer.cancel()
        node_name = record.registered_node
        if node_name is None:
            return
        with contextlib.suppress(ApiError):
            self.store.delete("nodes", node_name)
        for pod in self.store.view("pods"):
            if (pod.get("spec") or {}).get("nodeName") == node_name:
                with contextlib.suppress(ApiError):
                    self.store.delete(
                        "pods", pod["metadata"]["name"], pod["metadata"]["namespace"], grace_period_seconds=0
                    )
        self.wake()

    # ------------------------------------------------------------------ registration

    def _register(self, instance_id: str) -> None:
        record = self.instances.get(instance_id)
        if record is None or record.gone or record.registered_node is not None:
            return
        reservations = self.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        instance = reservations[0]["Instances"][0] if reservations else None
        if instance is None or instance["State"]["Name"] in GONE_STATES:
            return
        node = self.node_for(instance)
        try:
            self.store.create("nodes", node, keep_status=True)
        except ApiError:
            return
        record.registered_node = node["metadata"]["name"]
        startup = [
            t for t in node["spec"].get("taints") or [] if t["key"] in self.settings.startup_taint_keys
        ]
        if startup:
            self.clock.call_later(
                self.settings.startup_taint_delay,
                functools.partial(self._clear_startup_taints, record.registered_node),
            )
        self.wake()

    def bootstrap_of(self, instance_id: str) -> NodeBootstrap:
        attribute = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        return self.reader((attribute.get("UserData") or {}).get("Value") or "")

    def runs_windows(self, instance_id: str) -> bool:
        """Whether the instance boots Windows: its user data calls the EKS Windows bootstrap script."""
        from longshore.adapters.aws.userdata import decode_user_data

        attribute = self.ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        return "Start-EKSBootstrap.ps1" in decode_user_data(
            (attribute.get("UserData") or {}).get("Value") or ""
        )

    def node_for(self, instance: dict[str, Any]) -> JSON:
        """The Node object the instance's kubelet registers."""
        instance_id = instance["InstanceId"]
        zone = instance["Placement"]["AvailabilityZone"]
        region = zone[:-1]
        type_name = instance["InstanceType"]
        bootstrap = self.bootstrap_of(instance_id)
        system = "windows" if self.runs_windows(instance_id) else "linux"
        shape = node_shape(
            self._instance_type(type_name),
            bootstrap,
            image_arch=instance.get("Architecture"),
            root_volume_gib=self._root_gib(instance),
            efa_devices=self.efa_devices(instance_id),
        )
        name = instance.get("PrivateDnsName") or f"ip-{instance_id}.{region}.compute.internal"
        tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or []}
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": system,
            "beta.kubernetes.io/os": system,
            "kubernetes.io/arch": shape.arch,
            "beta.kubernetes.io/arch": shape.arch,
            "node.kubernetes.io/instance-type": type_name,
            "beta.kubernetes.io/instance-type": type_name,
            "topology.kubernetes.io/zone": zone,
            "failure-domain.beta.kubernetes.io/zone": zone,
            "topology.ebs.csi.aws.com/zone": zone,  # the EBS CSI driver's node plugin registers its zone key
            "topology.kubernetes.io/region": region,
            "failure-domain.beta.kubernetes.io/region": region,
            "karpenter.sh/capacity-type": "spot"
            if instance.get("InstanceLifecycle") == "spot"
            else "on-demand",
        }
        zone_id = self._zone_id(zone)
        if zone_id:
            labels["topology.k8s.aws/zone-id"] = zone_id
        if NODEPOOL_TAG in tags:
            labels[NODEPOOL_TAG] = tags[NODEPOOL_TAG]
        labels.update(bootstrap.labels)
        now = rfc3339(self.clock.now())
        address = instance.get("PrivateIpAddress") or ""
        return {
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "providerID": f"aws:///{zone}/{instance_id}",
                "taints": [dict(t) for t in bootstrap.taints],
            },
            "status": {
                "capacity": quantities(shape.capacity),
                "allocatable": quantities(shape.allocatable),
                "conditions": [
                    _condition("MemoryPressure", "False", "KubeletHasSufficientMemory", now),
                    _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", now),
                    _condition("PIDPressure", "False", "KubeletHasSufficientPID", now),
                    _condition("Ready", "True", "KubeletReady", now, "kubelet is posting ready status"),
                ],
                "addresses": [
                    {"type": "InternalIP", "address": address},
                    {"type": "InternalDNS", "address": name},
                    {"type": "Hostname", "address": name},
                ],
                "nodeInfo": {
                    "architecture": shape.arch,
                    "operatingSystem": "linux",
                    "kubeletVersion": self.settings.kubelet_version,
                    "containerRuntimeVersion": "containerd://1.7.27",
                    "machineID": instance_id,
                    "systemUUID": instance_id,
                    "bootID": instance_id,
                    "kernelVersion": "6.1.0",
                    "osImage": "Amazon Linux",
                    "kubeProxyVersion": "",
                },
            },
        }

    def _instance_type(self, name: str) -> dict[str, Any]:
        if name not in self._instance_types:
            found = self.ec2.describe_instance_types(InstanceTypes=[name])["InstanceTypes"]
            self._instance_types[name] = found[0] if found else {}
        return self._instance_types[name]

    def _zone_id(self, zone: str) -> str | None:
        if self._zone_ids is None:
            zones = self.ec2.describe_availability_zones()["AvailabilityZones"]
            self._zone_ids = {z["ZoneName"]: z.get("ZoneId", "") for z in zones}
        return self._zone_ids.get(zone) or None

    def _root_gib(self, instance: dict[str, Any]) -> int:
        root = instance.get("RootDeviceName")
        for mapping in instance.get("BlockDeviceMappings") or []:
            volume_id = (mapping.get("Ebs") or {}).get("VolumeId")
            if volume_id and (mapping.get("DeviceName") == root or root is None):
                volumes = self.ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]
                if volumes:
                    return int(volumes[0].get("Size") or DEFAULT_ROOT_VOLUME_GIB)
        return DEFAULT_ROOT_VOLUME_GIB

    def _clear_startup_taints(self, node_name: str) -> None:
        keys = self.settings.startup_taint_keys

        def change(node: JSON) -> None:
            node["spec"]["taints"] = [t for t in node["spec"].get("taints") or [] if t.get("key") not in keys]

        try:
            self.store.modify("nodes", node_name, None, change)
        except ApiError:
            return
        self.wake()

    # ------------------------------------------------------------------ pods

    def start_pods(self) -> float | None:
        """Run pods bound to Ready nodes whose start delay has passed; returns the next start time, if any."""
        now = self.clock.now()
        ready_nodes = {
            n["metadata"]["name"]: n
            for n in self.store.view("nodes")
            if matching.is_node_ready(n) and not metadata(n).get("deletionTimestamp")
        }
        next_due: float | None = None
        seen: set[str] = set()
        for pod in self.store.view("pods"):
            host = (pod.get("spec") or {}).get("nodeName")
            phase = (pod.get("status") or {}).get("phase")
            if host not in ready_nodes or phase != "Pending" or metadata(pod).get("deletionTimestamp"):
                continue
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            due = self._pod_seen.setdefault(uid, now) + self.settings.pod_start_delay
            if due <= now:
                self._run(pod, ready_nodes[host])
            else:
                next_due = due if next_due is None else min(next_due, due)
        self._pod_seen = {uid: t for uid, t in self._pod_seen.items() if uid in seen}
        return next_due

    def _run(self, pod: JSON, node: JSON) -> None:
        now = rfc3339(self.clock.now())
        host_ip = next(
            (
                a["address"]
                for a in (node.get("status") or {}).get("addresses") or []
                if a.get("type") == "InternalIP"
            ),
            "",
        )
        serial = next(self._pod_ips)
        pod_ip = f"10.{(serial >> 16) % 256}.{(serial >> 8) % 256}.{serial % 256}"

        def change(obj: JSON) -> None:
            status = obj.setdefault("status", {})
            status.update(
                {
                    "phase": "Running",
                    "hostIP": host_ip,
                    "podIP": pod_ip,
                    "podIPs": [{"ip": pod_ip}],
                    "startTime": now,
                }
            )
            kept = [
                c
                for c in status.get("conditions") or []
                if c.get("type") not in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ]
            status["conditions"] = kept + [
                _condition(kind, "True", None, now)
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ]
            status["containerStatuses"] = [
                {
                    "name": c.get("name"),
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "image": c.get("image", ""),
                    "imageID": "",
                    "state": {"running": {"startedAt": now}},
                }
                for c in (obj.get("spec") or {}).get("containers") or []
            ]

        with contextlib.suppress(ApiError):
            self.store.modify("pods", pod["metadata"]["name"], pod["metadata"]["namespace"], change)


def _condition(kind: str, status: str, reason: str | None, now: str, message: str | None = None) -> JSON:
    condition: JSON = {"type": kind, "status": status, "lastTransitionTime": now}
    if reason:
        condition["reason"] = reason
        condition["lastHeartbeatTime"] = now
    if message:
        condition["message"] = message
    return condition
