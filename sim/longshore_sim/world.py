"""A simulated world for Longshore's functions: moto's AWS, a simulated EKS cluster, and the functions built by
the production wiring against both.

Theory of operation: `SimulatedWorld` builds, inside moto's in-process `mock_aws`, everything the functions read
and write, then builds every function as its Lambda handler does: a `wiring.container.Container` over the
production `build_provisioner`, `build_planner`, `build_interruption` and `build_workflow_steps`, each container
making its `Runtime` with `new_runtime` (`Runtime.assembled` from the simulation's parts):

- AWS: `sim.aws.seed_cluster` (VPC, subnets and security group tagged for discovery, node role and instance
  profile, EKS cluster, the DynamoDB table, AMIs and their public SSM parameters). The functions' EC2 client
  carries the `FleetEmulator` (allocation order, capacity errors, ClientToken idempotency, crash injection)
  and a `ThrottleInjector`; their DynamoDB client makes one botocore attempt (botocore's retries sleep in wall
  time; the patient table retries on the virtual clock) and carries the claim table's `ThrottleInjector`. A
  second, plain EC2 client is what the simulated kubelets and the observers read.
- Kubernetes: `sim.cluster.SimulatedCluster` (the API emulator on 127.0.0.1, the scheduler, kubelets that turn
  moto's instances into Nodes after the boot delay, workload controllers) on a `VirtualClock`. The functions
  reach it through the real kubernetes client, configured by `adapters.aws.eks.api_client` from
  `eks:DescribeCluster` and a presigned STS token, pointed at the emulator's loopback URL. Unfiltered pod and
  node lists skip the watch cache (its catch-up waits for the server to be quiet in wall time).
- The cluster config: with `config_text` (what the runner gives: the scenario's files bundled), it is the SSM
  parameter the functions read at every invocation and before every later pass of the provisioner's and the
  planner's loops, merged with the NodePools and EC2NodeClasses in the emulator when its `poolSource` says so;
  `publish_config` changes it and every function rebuilds at its next pass, as deployed. Without it (tests of the provisioner alone) `config` is used as it is.
- Time: every wait of the system under test (batching, throttling backoff, Kubernetes retries) is
  `SimulatedWorld.sleep`, which steps the simulated cluster, so controllers and kubelets run while the
  provisioner "sleeps" and no wall time is spent.

The functions:

- `provisioners`: `service()` is the service of one invocation (`ProvisionerRuntime.service`, taken with
  `Container.get`, so a changed config rebuilds it first); `invoke()` runs one invocation.
- `planners`: the runner takes the planner with `planner_invocation()` at the start of each invocation and
  `planner_pass()` before each later pass (both rebuild it on a changed config); `cold_start_planner()` drops the built function, as a new container would.
- `sfn`: `sim.stepfunctions.StepFunctionsSimulator` on the virtual clock, running the real definitions of
  `workflow.definition` (`workflows`, a `SimulatedWorkflows`, is every function's workflow port); its Task
  states run `wiring.workflow_steps.process_step` in process on the `steps` container's `StepPorts`. Every
  step's output passes `step_observers` (the runner reads drain deadlines there, as one would read the
  execution history).
- `interruptions`: fed by `poll_queue()`: one event-source-mapping poll of the moto SQS queue, delivered
  through `wiring.interruption.process_batch` in the Lambda's SQS event shape; messages not reported in
  `batchItemFailures` are deleted, the others made visible again. The service's `ProvisionerTrigger` is the
  world itself: `trigger()` records the request and calls `provisioner_triggers` (the runner starts a
  provisioner pass at once).

The world is three modules: this one (building the world and its functions, time, the provisioner's
invocations, workloads), `world_traffic` (workflow steps, triggers, the webhook, the interruption queue, AMI
releases) and `world_observation` (instances and prices read from moto's backend, EC2 call observers);
`SimulatedWorld` is the one class, made of the other two's parts.

`runtime` is the world's own view through the same wiring (`store`, `lease`, `instances`, `kube`...), for tests
and observers. Tests use the world directly to inject faults (`fleet`, `throttle`, `cluster.emulator.faults`)
and assert outcomes; `sim.runner.ScenarioRunner` drives it from a scenario file.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig
from longshore.services.provisioner import (
    ProvisionerInvocation,
    ProvisionerService,
    ProvisionerSettings,
    run_invocation,
)
from longshore_sim.clock import VirtualClock
from longshore_sim.world_observation import WorldObservation
from longshore_sim.world_observation import launched_instance_ids as launched_instance_ids
from longshore_sim.world_traffic import WorldTraffic

if TYPE_CHECKING:
    from longshore.services.disruption import DisruptionService
    from longshore.services.interruption import InterruptionService
    from longshore.wiring.runtime import Runtime
    from longshore.workflow.context import StepPorts

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


class SimulatedWorld(WorldTraffic, WorldObservation):
    """moto + a simulated cluster + the functions built by the production wiring (see the module docstring)."""

    def __init__(
        self,
        config: ClusterConfig,
        *,
        boot_delay: float = 30.0,
        zones: Sequence[str] | None = None,
        clock: VirtualClock | None = None,
        orphan_grace_s: float | None = None,
        config_text: str | None = None,
    ) -> None:
        self.config = config
        self.config_text = config_text  # the SSM parameter's YAML; None: `config` is used as it is
        self._runtimes: list[Runtime] = []
        self._kube_timeouts = False  # every function's kube client honours the emulator's timeout faults
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
        self._muted: list[tuple[logging.Handler, int]] = []
        self.step_observers: list[Callable[[str, dict[str, Any]], None]] = []
        self.step_crashes = 0  # workflow steps still to crash after their work (scenario `crash`)
        self._crashed_last = False
        self.provisioner_triggers: list[Callable[[str], None]] = []
        self.planner_triggers: list[Callable[[str], None]] = []
        self.triggered: list[tuple[float, str]] = []
        self.webhook_calls = 0
        self.webhook_triggers: dict[str, int] = {}
        self.interruption_responses: list[dict[str, Any]] = []

    # -- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> SimulatedWorld:
        from botocore.config import Config  # type: ignore[import-untyped]
        from moto import mock_aws

        from longshore.adapters.aws import retry
        from longshore.adapters.aws.instance_types import load_catalog
        from longshore_sim import moto_speed
        from longshore_sim.aws import FleetEmulator, seed_cluster
        from longshore_sim.cluster import KubeletSettings, SimulatedCluster
        from longshore_sim.placement_groups import PlacementGroups
        from longshore_sim.reservations import ReservationStore
        from longshore_sim.throttle import ThrottleInjector

        moto_speed.install()
        self._mock = mock_aws()
        self._mock.start()
        try:
            session = moto_speed.session(self.config.region)
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
            self.placement_groups = PlacementGroups().attach(self.ec2)  # moto has none
            for node_class in self.config.node_classes:
                if node_class.placement_group is not None and node_class.placement_group.name:
                    self.placement_groups.ensure(node_class.placement_group.name)
            self.reservations = ReservationStore(self.clock.now).attach(self.ec2)
            self.cluster.start()
            # botocore's own retries sleep in real time; on virtual time the patient layer retries alone
            self.dynamodb = session.client(
                "dynamodb",
                region_name=self.config.region,
                config=retry.CLIENT_CONFIG.merge(
                    Config(retries={"total_max_attempts": 1, "mode": "standard"})
                ),
            )
            self.dynamo_throttle = ThrottleInjector("ProvisionedThroughputExceededException").attach(
                self.dynamodb
            )
            self.ssm = retry.client(session, "ssm", self.config.region)
            self._start_functions(session)
            self.cluster.store.admission.append(self._admission_webhook)
        except BaseException:
            self.close()
            raise
        return self

    def _start_functions(self, session: Any) -> None:
        """Every function as its handler builds it: a `Container` per function over the production `build_*`,
        each runtime assembled from the simulation's parts (`new_runtime`)."""
        from longshore.config.settings import RuntimeSettings
        from longshore.wiring.container import Container
        from longshore.wiring.interruption import build_interruption
        from longshore.wiring.planner import build_planner, carry
        from longshore.wiring.provisioner import build_provisioner
        from longshore.wiring.workflow_steps import build_workflow_steps
        from longshore_sim.sfn_workflows import SimulatedWorkflows
        from longshore_sim.stepfunctions import StepFunctionsSimulator

        config = self.config
        self._mute_lambda_stdout()
        account = "123456789012"
        self.settings = RuntimeSettings(
            cluster_name=config.name,
            region=config.region,
            config_parameter=f"/longshore/{config.name}/config",
            table_name=self.seeded.table_name,
            disruption_state_machine_arn=(
                f"arn:aws:states:{config.region}:{account}:stateMachine:{config.name}-disruption"
            ),
            provisioner_function_name=f"{config.name}-provisioner",
            planner_function_name=f"{config.name}-planner",
        )
        if self.config_text is not None:
            self.publish_config(self.config_text)
        self.sfn = StepFunctionsSimulator(self.clock, self._invoke_step)
        self.workflows = SimulatedWorkflows(self.sfn)
        self.sqs = session.client("sqs", region_name=config.region)
        self.queue_url = self.seeded.queue_url
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.provisioners = Container(build_provisioner, self.new_runtime)
        self.planners = Container(build_planner, self.new_runtime, carry=carry)
        self.interruptions = Container(build_interruption, self.new_runtime)
        self.steps = Container(build_workflow_steps, self.new_runtime)
        # The world's own view, for tests and observers: the same wiring, never rebuilt.
        self.runtime = self.new_runtime()
        self.table = self.runtime.table
        self.store = self.runtime.claims
        self.offerings = self.runtime.offerings
        self.lease = self.runtime.lease
        self.instances = self.runtime.instances
        self.api_client = self.runtime.kube_api
        self.kube = self.runtime.kube_cluster()

    def new_runtime(self) -> Runtime:
        """The `Runtime` of a new container of any function: moto's session, the emulator's URL, the virtual
        clock, the simulation's EC2, SSM and DynamoDB clients, the simulated workflows and the world as the
        interruption handler's provisioner trigger. With `config_text`, the config is the SSM parameter's, read
        again at every invocation as deployed; otherwise `config` is used as it is."""
        from longshore.wiring.runtime import Runtime
        from longshore.wiring.runtime_parts import RuntimeParts

        parts = RuntimeParts(
            clients={"ec2": self.ec2, "ssm": self.ssm, "dynamodb": self.dynamodb},
            workflows=self.workflows,
            catalog=lambda: self.catalog,
            provisioner_trigger=self,
            config=None if self.config_text is not None else self.config,
            watch_cache=False,  # its catch-up waits for quiet in wall time; virtual time cannot
        )
        runtime = Runtime.assembled(
            self.settings,
            parts,
            session=self.session,
            clock=self.time,
            kube_endpoint=self.cluster.emulator.url,
            metrics=self.metrics,
        )
        self._runtimes.append(runtime)
        if self._kube_timeouts:
            self._install_timeouts(runtime)
        return runtime

    def time_out_kube_api(self) -> None:
        """Let the emulator's `timeout` faults reach every function's kubernetes client, the containers built
        from now on included (`kubeapi.timeouts`: the client's side of a read timeout, on virtual time)."""
        self._kube_timeouts = True
        for runtime in self._runtimes:
            self._install_timeouts(runtime)

    def _install_timeouts(self, runtime: Runtime) -> None:
        from longshore_sim.kubeapi import timeouts

        timeouts.install(runtime.kube_api, self.cluster.emulator.faults, self.sleep)

    def publish_config(self, text: str) -> None:
        """Put a cluster config in the SSM parameter the functions read at every invocation (a deploy, or
        `aws ssm put-parameter`); every function uses it from its next invocation."""
        self.ssm.put_parameter(
            Name=self.settings.config_parameter, Value=text, Type="String", Tier="Advanced", Overwrite=True
        )
        self.config_text = text

    @property
    def launcher(self) -> Any:
        """The provisioner container's claim launcher."""
        return self.provisioners.current().launcher

    @property
    def planner(self) -> DisruptionService:
        """The planner container's service as it is (no config re-read: between passes of one invocation)."""
        return self.planners.current()

    def planner_invocation(self) -> DisruptionService:
        """The planner at the start of an invocation: rebuilt first when the cluster config changed (no
        Kubernetes call budget unless the caller sets one with `planners.ends_in`)."""
        planner = self.planners.get()
        self.planners.ends_in(None)
        return planner

    def planner_pass(self) -> DisruptionService:
        """The planner before a later pass of an invocation: rebuilt first when the cluster config changed
        (`Container.refresh`, as `handlers.planner`'s loop does)."""
        return self.planners.refresh() or self.planners.current()

    @property
    def interruption(self) -> InterruptionService:
        return self.interruptions.current()

    @property
    def step_ports(self) -> StepPorts:
        return self.steps.current()

    def lose_claim_table(self) -> int:
        """Every item of the claim table deleted (a restore gone wrong, a person emptying it): the claims, the
        capacity-error marks and the leases. Returns how many items went."""
        client = self.table.client
        removed = 0
        kwargs: dict[str, Any] = {"TableName": self.table.name, "ProjectionExpression": "pk, sk"}
        while True:
            page = client.scan(**kwargs)
            for item in page.get("Items", []):
                client.delete_item(TableName=self.table.name, Key={"pk": item["pk"], "sk": item["sk"]})
                removed += 1
            if "LastEvaluatedKey" not in page:
                return removed
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def cold_start_planner(self) -> None:
        """Replace the planner's container: the next invocation builds the function again, from a new
        runtime, with no memory of earlier passes."""
        self.planners.install(None)

    def _mute_lambda_stdout(self) -> None:
        """The Lambda modules' Powertools loggers print JSON to stdout (CloudWatch's input); in the simulation
        their lines go only where the `longshore` logger's other handlers send them (`provisioner.log`)."""
        import longshore.handlers.interruption
        import longshore.handlers.planner
        import longshore.handlers.workflow_steps  # noqa: F401  (their loggers exist before muting)

        base = logging.getLogger("longshore")
        for handler in base.handlers:
            if type(handler) is logging.StreamHandler and handler.stream in (sys.stdout, sys.stderr):
                self._muted.append((handler, handler.level))
                handler.setLevel(logging.CRITICAL + 1)

    def close(self) -> None:
        for handler, level in self._muted:
            handler.setLevel(level)
        self._muted = []
        cluster = getattr(self, "cluster", None)
        if cluster is not None:
            cluster.close()
        for runtime in self._runtimes:
            client = runtime.__dict__.get("kube_api")
            if client is not None:
                # Close the keep-alive connections: each one keeps an emulator handler thread, and through it
                # this whole world, alive after the run (chaos workers run seed after seed in one process).
                client.rest_client.pool_manager.clear()
                client.close()
        self._runtimes = []
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
        """The provisioner service of one invocation, from the container (rebuilt first when the cluster
        config changed), as `handlers.provisioner` takes it."""
        service = self.provisioners.get().service(owner or f"sim-run-{next(self._owners)}", settings)
        self.provisioners.ends_in(None)  # no Kubernetes call budget unless the caller sets one (`invoke`)
        return service

    def invoke(
        self,
        *,
        timeout_s: float = LAMBDA_TIMEOUT_S,
        owner: str | None = None,
        settings: ProvisionerSettings | None = None,
    ) -> ProvisionerInvocation:
        """One provisioner Lambda invocation of `timeout_s` virtual seconds, from now."""
        deadline = self.clock.now() + timeout_s
        service = self.service(owner, settings)
        self.provisioners.ends_in(timeout_s)  # as `handlers.provisioner` does from the Lambda context
        return run_invocation(
            service,
            remaining_s=lambda: deadline - self.clock.now(),
            idle_wait=self.sleep,
            reload=self.reloader(service.owner, settings),
        )

    def reloader(
        self, owner: str, settings: ProvisionerSettings | None = None
    ) -> Callable[[ProvisionerService], ProvisionerService | None]:
        """The provisioner's per-pass config check, as `handlers.provisioner` wires it."""
        from longshore.wiring.provisioner import reloader

        return reloader(self.provisioners, owner, settings)

    def run_schedule(
        self,
        duration_s: float,
        *,
        every_s: float = 60.0,
        timeout_s: float = LAMBDA_TIMEOUT_S,
        settings: ProvisionerSettings | None = None,
    ) -> list[ProvisionerInvocation]:
        """The provisioner as the stack's schedule runs it for `duration_s`: an invocation every `every_s`
        from now (one that outlasts the period delays the next, as the reserved concurrency of 1 does)."""
        start = self.clock.now()
        end = start + duration_s
        reports: list[ProvisionerInvocation] = []
        tick = start
        while self.clock.now() < end:
            if self.clock.now() < tick:
                self.sleep(min(tick, end) - self.clock.now())
                continue
            reports.append(self.invoke(timeout_s=min(timeout_s, end - self.clock.now()), settings=settings))
            elapsed = self.clock.now() - start
            tick = start + (int(elapsed // every_s) + 1) * every_s
        return reports

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
