"""A simulated world for the provisioner: moto's AWS, a simulated EKS cluster, and the Lambda's adapters wired to both.

Theory of operation: `SimulatedWorld` builds, inside moto's in-process `mock_aws`, everything the provisioner
Lambda reads and writes, and wires the production adapters exactly as `handlers.provisioner` does:

- AWS: `sim.aws.seed_cluster` (VPC, subnets and security group tagged for discovery, node role and instance
  profile, EKS cluster, the DynamoDB table, AMIs and their public SSM parameters). The launcher's EC2 client
  carries the `FleetEmulator` (allocation order, capacity errors, ClientToken idempotency, crash injection)
  and a `ThrottleInjector`; a second, plain EC2 client is what the simulated kubelets and the observers read.
- Kubernetes: `sim.cluster.SimulatedCluster` (the API emulator on 127.0.0.1, the scheduler, kubelets that turn
  moto's instances into Nodes after the boot delay, workload controllers) on a `VirtualClock`. The
  provisioner reaches it through the real kubernetes client, configured by `adapters.aws.eks.api_client`
  from `eks:DescribeCluster` and a presigned STS token, pointed at the emulator's loopback URL.
- Time: every wait of the system under test (batching, throttling backoff, Kubernetes retries) is
  `SimulatedWorld.sleep`, which steps the simulated cluster, so controllers and kubelets run while the
  provisioner "sleeps" and no wall time is spent.

`invoke()` is one Lambda invocation (`services.provisioner.run_invocation` with a virtual deadline). Tests
use the world directly to inject faults (`fleet`, `throttle`, `cluster.emulator.faults`) and assert outcomes;
`sim.runner.ScenarioRunner` drives it from a scenario file.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig
from longshore.services.provisioner import (
    InvocationReport,
    ProvisionerService,
    ProvisionerSettings,
    run_invocation,
)
from longshore.sim.clock import VirtualClock

os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

DEFAULT_ZONES = ("a", "b", "c")
LAMBDA_TIMEOUT_S = 120.0


class VirtualTime:
    """The `Clock` port for the system under test: reads the virtual clock, sleeps by stepping the world."""

    def __init__(self, clock: VirtualClock, sleep: Callable[[float], None]) -> None:
        self._clock = clock
        self._sleep = sleep

    def now(self) -> float:
        return self._clock.now()

    def sleep(self, seconds: float) -> None:
        self._sleep(seconds)


class SimulatedWorld:
    """moto + a simulated cluster + the provisioner's adapters (see the module docstring)."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        boot_delay: float = 30.0,
        zones: Sequence[str] | None = None,
        clock: VirtualClock | None = None,
        orphan_grace_s: float | None = None,
    ) -> None:
        self.config = config
        self.boot_delay = boot_delay
        self.zones = tuple(zones or (f"{config.region}{z}" for z in DEFAULT_ZONES))
        self.clock = clock or VirtualClock()
        self.metrics = MemoryMetricsSink()
        self.launch_observers: list[Callable[[dict[str, Any]], None]] = []
        self.terminate_observers: list[Callable[[list[str]], None]] = []
        self.fleet_request_times: list[float] = []
        self._orphan_grace_s = orphan_grace_s
        self._mock: Any = None
        self._owners = itertools.count(1)
        self.time = VirtualTime(self.clock, self.sleep)

    # -- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> SimulatedWorld:
        import boto3  # type: ignore[import-untyped]
        from moto import mock_aws

        from longshore.adapters.aws import retry
        from longshore.adapters.aws.dynamodb import (
            DynamoClaimStore,
            DynamoLease,
            DynamoOfferingAvailability,
            DynamoTable,
        )
        from longshore.adapters.aws.eks import TokenSource, api_client, describe_cluster
        from longshore.adapters.aws.fleet import Ec2Launcher
        from longshore.adapters.aws.instance_types import load_catalog
        from longshore.adapters.aws.instances import Ec2Instances
        from longshore.adapters.kube.cluster import KubeCluster
        from longshore.sim.aws import FleetEmulator, ThrottleInjector, seed_cluster
        from longshore.sim.cluster import KubeletSettings, SimulatedCluster

        self._mock = mock_aws()
        self._mock.start()
        try:
            session = boto3.session.Session(region_name=self.config.region)
            self.session = session
            self.seeded = seed_cluster(
                session,
                self.config.name,
                kubernetes_version=self.config.kubernetes_version,
                zones=self.zones,
            )
            self.ec2_reader = session.client("ec2", region_name=self.config.region)
            self.ec2 = retry.client(session, "ec2", self.config.region)
            self.cluster = SimulatedCluster(
                ec2=self.ec2_reader,
                cluster_name=self.config.name,
                clock=self.clock,
                kubelet=KubeletSettings(boot_delay=self.boot_delay),
                ec2_poll_interval=None,
                kubernetes_version=self.config.kubernetes_version,
            )
            # The cluster hears of launches first, so a crash injected after CreateFleet still boots the node.
            self.cluster.watch_ec2_client(self.ec2)
            self.ec2.meta.events.register_first(
                "before-parameter-build.ec2.CreateFleet",
                self._on_fleet_request,
                unique_id="longshore-sim-fleet",
            )
            self.ec2.meta.events.register_first(
                "after-call.ec2.CreateFleet", self._on_fleet_answer, unique_id="longshore-sim-launch"
            )
            self.ec2.meta.events.register_first(
                "after-call.ec2.TerminateInstances", self._on_terminate, unique_id="longshore-sim-terminate"
            )
            self.catalog: Catalog = load_catalog(
                self.ec2_reader, None, self.config.region, self.clock, zones=self.zones
            )
            self.fleet = FleetEmulator(price_of=self._price_of).attach(self.ec2)
            self.throttle = ThrottleInjector().attach(self.ec2)
            self.cluster.start()
            self.table = DynamoTable(
                retry.client(session, "dynamodb", self.config.region), self.seeded.table_name
            )
            self.store = DynamoClaimStore(self.table)
            self.offerings = DynamoOfferingAvailability(self.table)
            self.lease = DynamoLease(self.table)
            self.instances = Ec2Instances(self.ec2, self.config.name)
            info = describe_cluster(session.client("eks", region_name=self.config.region), self.config.name)
            tokens = TokenSource.for_cluster(
                session.client("sts", region_name=self.config.region), self.config.name, self.clock.now
            )
            self.api_client = api_client(info, tokens, endpoint=self.cluster.emulator.url)
            self.kube = KubeCluster(self.api_client, sleep=self.sleep, now=self.clock.now)
            self.launcher = Ec2Launcher(
                ec2=self.ec2,
                ssm=retry.client(session, "ssm", self.config.region),
                iam=session.client("iam", region_name=self.config.region),
                cluster=info,
                config=self.config,
                store=self.store,
                offerings=self.offerings,
                instances=self.instances,
                sleep=self.sleep,
            )
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        cluster = getattr(self, "cluster", None)
        if cluster is not None:
            cluster.close()
        client = getattr(self, "api_client", None)
        if client is not None:
            client.close()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None

    def __enter__(self) -> SimulatedWorld:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- time -----------------------------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass, with the cluster's controllers and kubelets running."""
        self.cluster.step(max(0.0, seconds))

    def advance_to(self, when: float) -> None:
        self.cluster.run_until(max(when, self.clock.now()))

    # -- the provisioner, as the Lambda runs it ---------------------------------------------------------------

    def service(
        self, owner: str | None = None, settings: ProvisionerSettings | None = None
    ) -> ProvisionerService:
        return ProvisionerService(
            cluster=self.kube,
            store=self.store,
            offerings=self.offerings,
            lease=self.lease,
            launcher=self.launcher,
            instances=self.instances,
            catalog=lambda: self.catalog,
            config=self.config,
            clock=self.time,
            metrics=self.metrics,
            owner=owner or f"sim-run-{next(self._owners)}",
            settings=settings,
        )

    def invoke(
        self,
        *,
        timeout_s: float = LAMBDA_TIMEOUT_S,
        owner: str | None = None,
        idle_wait: Callable[[float], bool] | None = None,
        settings: ProvisionerSettings | None = None,
    ) -> InvocationReport:
        """One provisioner Lambda invocation of `timeout_s` virtual seconds, from now."""
        deadline = self.clock.now() + timeout_s

        def wait(seconds: float) -> bool:
            self.sleep(seconds)
            return True

        return run_invocation(
            self.service(owner, settings),
            remaining_s=lambda: deadline - self.clock.now(),
            idle_wait=idle_wait or wait,
        )

    # -- workloads -------------------------------------------------------------------------------------------

    def apply(self, manifest: dict[str, Any]) -> None:
        namespace = (manifest.get("metadata") or {}).get("namespace")
        if namespace and self.cluster.store.try_get("namespaces", namespace) is None:
            self.cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self.cluster.apply(manifest)

    def apply_file(self, path: Path) -> list[str]:
        """Create every document of a YAML file; returns `Kind/name` of each."""
        created = []
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(document, dict):
                continue
            self.apply(document)
            created.append(f"{document.get('kind')}/{(document.get('metadata') or {}).get('name')}")
        return created

    # -- observation ------------------------------------------------------------------------------------------

    def live_instances(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        paginator = self.ec2_reader.get_paginator("describe_instances")
        for page in paginator.paginate(
            Filters=[
                {"Name": "tag:longshore.io/cluster", "Values": [self.config.name]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        ):
            for reservation in page["Reservations"]:
                found.extend(reservation["Instances"])
        return found

    def price_of_instance(self, instance: dict[str, Any]) -> float:
        capacity_type = "spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand"
        zone = str((instance.get("Placement") or {}).get("AvailabilityZone", ""))
        return self._price_of(str(instance.get("InstanceType")), zone, capacity_type) or 0.0

    def _price_of(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        found = self.catalog.get(instance_type)
        if found is None:
            return None
        return next(
            (o.price for o in found.offerings if o.zone == zone and o.capacity_type == capacity_type), None
        )

    def _on_fleet_request(self, **_: Any) -> None:
        self.fleet_request_times.append(self.clock.now())

    def _on_fleet_answer(self, parsed: dict[str, Any], **_: Any) -> None:
        for observer in self.launch_observers:
            observer(parsed)

    def _on_terminate(self, parsed: dict[str, Any], **_: Any) -> None:
        ids = [str(i["InstanceId"]) for i in parsed.get("TerminatingInstances") or []]
        for observer in self.terminate_observers:
            observer(ids)


def launched_instance_ids(parsed: dict[str, Any]) -> Iterable[str]:
    """Instance ids in a CreateFleet answer."""
    for entry in parsed.get("Instances") or []:
        yield from (str(i) for i in entry.get("InstanceIds") or [])
