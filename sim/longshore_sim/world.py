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

The disruption side is wired the same way, as `handlers.planner`, `handlers.workflow_steps` and
`handlers.interruption` wire it:

- `planner`: `services.disruption.DisruptionService` with `PlannerPorts` on the kubernetes client, the claim
  store, the launcher (planned replacements) and `handlers.planner.ResolvedImages` (the AMIs the node classes
  resolve to now, re-read every 5 min). The runner calls `run_pass()` on its cadence.
- `sfn`: `sim.stepfunctions.StepFunctionsSimulator` on the virtual clock, running the real definitions of
  `workflow.definition` (`workflows`, a `SimulatedWorkflows`, is both the planner's and the interruption
  handler's workflow port); its Task states run `handlers.workflow_steps.process_step` in process against
  `step_ports` (the kubernetes client, the claim store, EC2 and the real `ClusterReplacementLauncher`).
  Every step's output passes `step_observers` (the runner reads drain deadlines there, as one would read the
  execution history).
- `interruption`: `services.interruption.InterruptionService`, fed by `poll_queue()`: one event-source-mapping
  poll of the moto SQS queue, delivered through `handlers.interruption.process_batch` in the Lambda's SQS
  event shape; messages not reported in `batchItemFailures` are deleted, the others made visible again. The
  service's `ProvisionerTrigger` is the world itself: `trigger()` records the request and calls
  `provisioner_triggers` (the runner starts a provisioner pass at once).

`invoke()` is one Lambda invocation (`services.provisioner.run_invocation` with a virtual deadline). Tests
use the world directly to inject faults (`fleet`, `throttle`, `cluster.emulator.faults`) and assert outcomes;
`sim.runner.ScenarioRunner` drives it from a scenario file.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

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
        import boto3  # type: ignore[import-untyped]
        from botocore.config import Config  # type: ignore[import-untyped]
        from moto import mock_aws

        from longshore.adapters.aws import retry
        from longshore.adapters.aws.dynamodb import (
            DynamoClaimStore,
            DynamoLease,
            DynamoOfferingAvailability,
            DynamoTable,
        )
        from longshore.adapters.aws.eks import TokenSource, api_client, describe_cluster
        from longshore.adapters.aws.fleet import Ec2Fleet
        from longshore.adapters.aws.instance_types import load_catalog
        from longshore.adapters.aws.instances import Ec2Instances
        from longshore.adapters.kube.cluster import KubeCluster
        from longshore.services.launch import ClaimLauncher
        from longshore_sim.aws import FleetEmulator, ThrottleInjector, seed_cluster
        from longshore_sim.cluster import KubeletSettings, SimulatedCluster

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
            # botocore's own retries sleep in real time; on virtual time the patient layer retries alone
            dynamodb = session.client(
                "dynamodb",
                region_name=self.config.region,
                config=retry.CLIENT_CONFIG.merge(
                    Config(retries={"total_max_attempts": 1, "mode": "standard"})
                ),
            )
            self.dynamo_throttle = ThrottleInjector("ProvisionedThroughputExceededException").attach(dynamodb)
            self.table = DynamoTable(dynamodb, self.seeded.table_name, sleep=self.sleep)
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
            self.ec2_fleet = fleet = Ec2Fleet(
                ec2=self.ec2,
                ssm=retry.client(session, "ssm", self.config.region),
                iam=session.client("iam", region_name=self.config.region),
                cluster=info,
                sleep=self.sleep,
            )
            self.launcher = ClaimLauncher(
                fleet=fleet,
                config=self.config,
                store=self.store,
                offerings=self.offerings,
                instances=self.instances,
                clock=self.clock,
            )
            self._start_disruption(session, info)
            self.cluster.store.admission.append(self._admission_webhook)
        except BaseException:
            self.close()
            raise
        return self

    def _start_disruption(self, session: Any, info: Any) -> None:
        """The planner, the workflows on the Step Functions simulator, and the interruption handler."""
        from longshore.adapters.aws import retry
        from longshore.adapters.aws.amis import AmiResolver, ResolvedImages
        from longshore.adapters.kube.cluster import KubeCluster
        from longshore.services.disruption import DisruptionService, PlannerPorts
        from longshore.services.interruption import InterruptionService, rebalance_policies
        from longshore.services.replacement import ClusterReplacementLauncher
        from longshore.workflow.context import StepPorts
        from longshore_sim.stepfunctions import SimulatedWorkflows, StepFunctionsSimulator

        config = self.config
        self._mute_lambda_stdout()
        self.ssm = retry.client(session, "ssm", config.region)
        steps_cluster = KubeCluster(
            self.api_client, component="longshore-disruption", sleep=self.sleep, now=self.clock.now
        )
        self.replacements = ClusterReplacementLauncher(
            cluster=steps_cluster,
            store=self.store,
            offerings=self.offerings,
            launcher=self.launcher,
            config=config,
            catalog=lambda: self.catalog,
            metrics=self.metrics,
        )
        self.step_ports = StepPorts(
            cluster_name=config.name,
            cluster=steps_cluster,
            claims=self.store,
            instances=self.instances,
            replacements=self.replacements,
            clock=self.time,
            termination_grace_periods={p.name: p.termination_grace_period_seconds for p in config.node_pools},
        )
        self.sfn = StepFunctionsSimulator(self.clock, self._invoke_step)
        self.workflows = SimulatedWorkflows(self.sfn)
        self._new_planner: Callable[[], DisruptionService] = lambda: DisruptionService(
            config,
            lambda: self.catalog,
            PlannerPorts(
                cluster=KubeCluster(
                    self.api_client, component="longshore-disruption", sleep=self.sleep, now=self.clock.now
                ),
                claims=self.store,
                offerings=self.offerings,
                workflow=self.workflows,
                launcher=self.launcher,
                clock=self.time,
                metrics=self.metrics,
                images=ResolvedImages(
                    lambda: AmiResolver(self.ssm, self.ec2), config.kubernetes_version, self.clock.now
                ),
            ),
            logging.getLogger("longshore.planner"),
        )
        self.planner = self._new_planner()
        self.interruption = InterruptionService(
            claims=self.store,
            offerings=self.offerings,
            workflow=self.workflows,
            cluster=KubeCluster(
                self.api_client, component="longshore-interruption", sleep=self.sleep, now=self.clock.now
            ),
            instances=self.instances,
            provisioner=self,
            clock=self.time,
            rebalance_policy=rebalance_policies(config),
        )
        self.sqs = session.client("sqs", region_name=config.region)
        self.queue_url = self.seeded.queue_url
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]

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
        """Replace the planner's container: a new service with no memory of earlier passes."""
        self.planner = self._new_planner()

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
        client = getattr(self, "api_client", None)
        if client is not None:
            # Close the keep-alive connections: each one keeps an emulator handler thread, and through it this
            # whole world, alive after the run (chaos workers run seed after seed in one process).
            client.rest_client.pool_manager.clear()
            client.close()
        cluster = getattr(self, "cluster", None)
        if cluster is not None:
            cluster.close()
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
            workflow=self.workflows,  # drains Nodes deleted with kubectl (the stack sets the state machine)
        )

    def invoke(
        self,
        *,
        timeout_s: float = LAMBDA_TIMEOUT_S,
        owner: str | None = None,
        settings: ProvisionerSettings | None = None,
    ) -> ProvisionerInvocation:
        """One provisioner Lambda invocation of `timeout_s` virtual seconds, from now."""
        deadline = self.clock.now() + timeout_s
        return run_invocation(
            self.service(owner, settings),
            remaining_s=lambda: deadline - self.clock.now(),
            idle_wait=self.sleep,
        )

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

    # -- the disruption workflows, the interruption queue and the provisioner trigger --------------------------

    def _invoke_step(self, resource: str, payload: Any) -> Any:
        """The workflow-steps Lambda, in process (`handlers.workflow_steps.process_step`) on `step_ports`."""
        from longshore.wiring.workflow_steps import process_step

        result = process_step(payload, self.step_ports, self.metrics)
        if self.step_crashes > 0 and not self._crashed_last:
            # the runtime dies after the work, before the answer (a timeout, an OOM kill); its retry is let
            # through, so the crashes fall on successive steps
            from longshore_sim.stepfunctions import StatesError

            self.step_crashes -= 1
            self._crashed_last = True
            raise StatesError("Lambda.Unknown", "the function's runtime exited before answering (injected)")
        self._crashed_last = False
        step = str(payload.get("step") if isinstance(payload, dict) else "")
        for observer in self.step_observers:
            observer(step, result)
        return result

    def trigger(self, reason: str) -> None:
        """`ports.triggers.ProvisionerTrigger`: the interruption handler asks the provisioner to run now."""
        self.triggered.append((self.clock.now(), reason))
        for callback in self.provisioner_triggers:
            callback(reason)

    def _admission_webhook(
        self, operation: str, plural: str, obj: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        """The stack's admission webhook (`deploy/webhook.yaml`, pods only): the emulator's request as the
        function URL event Lambda would build, through `handlers.trigger.process` in process. Its provisioner
        trigger is `trigger()`; its planner trigger calls `planner_triggers` (the runner's planner cadence)."""
        if plural != "pods":
            return
        from longshore.adapters.events.admission import admission_review, function_url_event
        from longshore.core.triggers import PLANNER, PROVISIONER
        from longshore.wiring.trigger import process

        self.webhook_calls += 1
        uid = f"admission-{self.webhook_calls}"
        event = function_url_event(admission_review(uid, operation, obj, old))
        response = process(
            event,
            {
                PROVISIONER: _CountedTrigger(
                    PROVISIONER, self._webhook_provisioner_trigger, self.webhook_triggers
                ),
                PLANNER: _CountedTrigger(PLANNER, self._planner_trigger, self.webhook_triggers),
            },
        )
        if response.get("statusCode") != 200:
            raise RuntimeError(f"the trigger function answered {response}")

    def _webhook_provisioner_trigger(self, reason: str) -> None:
        for callback in self.provisioner_triggers:
            callback(f"admission: {reason}")

    def _planner_trigger(self, reason: str) -> None:
        for callback in self.planner_triggers:
            callback(reason)

    def send_event(self, event: dict[str, Any]) -> str:
        """Put an EventBridge event on the interruption queue, as the stack's rules do (the body is the event)."""
        return str(self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(event))["MessageId"])

    def poll_queue(self) -> int:
        """One poll of the event source mapping: receive up to 10 messages, run the interruption Lambda on them,
        delete the ones it did not report as failed and make the failed ones visible again. Returns how many
        messages were delivered."""
        from longshore.adapters.events.sqs import lambda_sqs_event
        from longshore.wiring.interruption import process_batch

        messages = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return 0
        response = process_batch(
            lambda_sqs_event(messages, self.queue_arn, self.config.region),
            self.interruption,
            self.time,
            self.metrics,
        )
        self.interruption_responses.append(response)
        failed = {item["itemIdentifier"] for item in response.get("batchItemFailures") or []}
        for message in messages:
            if message["MessageId"] in failed:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
            else:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)

    def queue_depth(self) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", 0)) + int(
            attributes.get("ApproximateNumberOfMessagesNotVisible", 0)
        )

    def publish_amis(self, release: str) -> dict[str, str]:
        """A new EKS AMI release: register an image per variant and point the public SSM parameters at it
        (what AWS does when it publishes an AMI). Returns {parameter name: new image id}."""
        from longshore.adapters.aws.amis import ssm_parameter_name
        from longshore_sim.aws import AMI_VARIANTS, put_public_parameter, register_image

        published: dict[str, str] = {}
        version = self.config.kubernetes_version
        for family, arch, accelerator in AMI_VARIANTS:
            name = f"{family.lower()}-{arch}-{accelerator or 'standard'}-{version}-{release}"
            image = register_image(self.ec2_reader, name, arch)
            parameter = ssm_parameter_name(family, version, arch, accelerator)
            put_public_parameter(self.config.region, parameter, image)
            published[parameter] = image
        # The launcher's resolver trusts an answer for 5 minutes (REFRESH_SECONDS); the scenario publishes at a
        # chosen instant and wants launches from then on to use it, as a cold container would: start afresh.
        self.ec2_fleet.forget_images()
        return published

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


class _CountedTrigger:
    """`ports.triggers.Trigger` for the simulated webhook: counts the triggers per target, then fires."""

    def __init__(self, target: str, fire: Callable[[str], None], counts: dict[str, int]) -> None:
        self.target, self.fire, self.counts = target, fire, counts

    def trigger(self, reason: str) -> None:
        self.counts[self.target] = self.counts.get(self.target, 0) + 1
        self.fire(reason)
