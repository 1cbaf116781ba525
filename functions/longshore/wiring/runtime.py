"""The Lambda functions' wiring: one `Runtime` per container, each production adapter built on first use.

Theory of operation: every handler needs some of the same things — a boto3 session and clients, the cluster
config from SSM, the DynamoDB claim table, cluster access (EKS endpoint, STS bearer token, the `kubernetes`
client behind `KubeCluster`), EC2 instances and the fleet launcher, the priced catalog, Step Functions. A
`Runtime` is made from `RuntimeSettings` (the function's environment, `Runtime.from_env()`) and exposes each
of them as a cached property, so a handler pays at cold start only for what it touches (the interruption
function never imports the fleet launcher, the workflow-steps function never reads prices until a surge
plans) and every later use in the same container is free. The handlers keep what they build from it in a
module global, which is what makes the wiring once per cold start.

- Clients come from `adapters.aws.retry.client` (botocore standard retries, Longshore's timeouts), one per
  service and region. IAM and Pricing are `LazyClient`s: the launcher holds one but calls IAM only when it
  must create an instance profile, and the catalog asks Pricing only when its cache is cold.
- The cluster config is the SSM parameter's YAML read through Powertools parameters: an `SSMProvider` bound
  to this runtime's SSM client (so moto and other endpoints work), parsed by `config.load_cluster_text`, then
  merged with the cluster's NodePools and EC2NodeClasses as its `poolSource` says (`config.cluster_objects`;
  `pool_verdicts` says which objects were used and why not). `refreshed()` reads both again, uncached, and
  answers a new `Runtime` when either changed: `wiring.container.Container` rebuilds every function on it, at
  the start of every invocation and before every pass of the provisioner's and the planner's loops (one
  GetParameter a pass when the pools come from the config; the three pool lists too when they do not).
- Shadow mode (`LONGSHORE_MODE=shadow`, set on every function by `cdk deploy -c mode=shadow`): the properties that
  hand out a port which writes to EC2 or Kubernetes (`kube_cluster`, `karpenter_objects`, `instances`,
  `launcher`, `workflows`) put `adapters.shadow`'s stand-ins in front of the real adapters, so every function's
  `build_*` makes all its decisions, logs and measures them (`ShadowWould*` metrics into `metrics`) and writes
  nothing there. Reads still go to the real cluster and cloud; the claim table (Longshore's own state) is written.
- Tests and the simulation pass their own `session`, `clock`, `config_text` or `kube_endpoint` (the API
  emulator's loopback URL instead of the EKS endpoint), and `Runtime.assembled` takes `RuntimeParts`
  (`wiring.runtime_parts`: what is injected, and the rules for it).
- Every Kubernetes adapter of a runtime shares its `kube_budget` (`adapters.kube.retry.CallBudget`), whose
  deadline each handler sets from the Lambda context: no Kubernetes call outlives the invocation.

Adapters are imported inside the properties that build them, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from longshore.ports.clock import Clock
from longshore.ports.cloud import CapacityReservations, Instances, Launcher
from longshore.ports.karpenter import KarpenterObjects
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.triggers import ProvisionerTrigger
from longshore.wiring.runtime_parts import RuntimeParts

if TYPE_CHECKING:
    from longshore.adapters.aws.dynamodb import (
        DynamoClaimStore,
        DynamoLease,
        DynamoOfferingAvailability,
        DynamoTable,
    )
    from longshore.adapters.aws.retry import LazyClient
    from longshore.adapters.aws.userdata import ClusterInfo
    from longshore.adapters.kube.retry import CallBudget
    from longshore.config.settings import RuntimeSettings
    from longshore.core.catalog import Catalog
    from longshore.core.model import ClusterConfig
    from longshore.services.disruption import SurgeWorkflow

CONFIG_MAX_AGE_S = 0  # read before every pass: a changed config takes effect at the next pass
PRICING_REGION = "us-east-1"  # the Pricing API answers in us-east-1 only


class Runtime:
    """The production adapters of one Lambda container, each built on first use (see the module docstring)."""

    def __init__(
        self,
        settings: RuntimeSettings,
        *,
        session: Any = None,
        clock: Clock | None = None,
        config_text: str | None = None,
        cluster_objects: tuple[dict[str, Any], ...] | None = None,
        kube_endpoint: str | None = None,
        metrics: MetricsSink | None = None,
        parts: RuntimeParts | None = None,
    ) -> None:
        self.settings = settings
        self.parts = parts or RuntimeParts()
        self._injected_metrics = metrics
        self._session = session
        self._injected_clock = clock
        self._config_text = config_text
        self._cluster_objects = cluster_objects
        self._kube_endpoint = kube_endpoint
        self._clients: dict[tuple[str, str], Any] = {}

    @classmethod
    def from_env(cls) -> Runtime:
        """The runtime of this function's environment (`RuntimeSettings.from_env()`)."""
        from longshore.config.settings import RuntimeSettings

        return cls(RuntimeSettings.from_env())

    @classmethod
    def assembled(
        cls,
        settings: RuntimeSettings,
        parts: RuntimeParts,
        *,
        session: Any,
        clock: Clock,
        kube_endpoint: str | None = None,
        metrics: MetricsSink | None = None,
    ) -> Runtime:
        """A runtime of explicit parts instead of the environment (the simulation: moto's session, the API
        emulator's URL, the virtual clock, its own clients, workflows and metric sink)."""
        return cls(
            settings,
            session=session,
            clock=clock,
            kube_endpoint=kube_endpoint,
            metrics=metrics,
            parts=parts,
        )

    # -- AWS access ---------------------------------------------------------------------------------------

    @cached_property
    def session(self) -> Any:
        if self._session is not None:
            return self._session
        import boto3  # type: ignore[import-untyped]

        return boto3.session.Session(region_name=self.settings.region)

    def client(self, service: str, region: str | None = None) -> Any:
        """The boto3 client for `service` (in the function's region unless `region` is given), made once."""
        key = (service, region or self.settings.region)
        if key[1] == self.settings.region and service in self.parts.clients:
            return self.parts.clients[service]
        if key not in self._clients:
            from longshore.adapters.aws import retry

            self._clients[key] = retry.client(self.session, service, key[1])
        return self._clients[key]

    def lazy_client(self, service: str, region: str | None = None) -> LazyClient:
        from longshore.adapters.aws.retry import LazyClient

        return LazyClient(lambda: self.client(service, region))

    @cached_property
    def clock(self) -> Clock:
        if self._injected_clock is not None:
            return self._injected_clock
        from longshore.adapters.clock import WallClock

        return WallClock()

    @cached_property
    def metrics(self) -> MetricsSink:
        """Where the function's metrics go: EMF through Powertools, unless a sink was injected."""
        if self._injected_metrics is not None:
            return self._injected_metrics
        from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
        from longshore.wiring.observability import metrics

        return PowertoolsMetricsSink(metrics())

    @property
    def shadow(self) -> bool:
        """Shadow mode: decisions are made and measured, nothing is written to EC2 or Kubernetes."""
        return self.settings.shadow

    # -- the cluster config -------------------------------------------------------------------------------

    @cached_property
    def _parameters(self) -> Any:
        from aws_lambda_powertools.utilities import parameters

        return parameters.SSMProvider(boto3_client=self.client("ssm"))

    def read_config_text(self) -> str:
        """The cluster config YAML in the SSM parameter, through Powertools parameters (cached 5 min)."""
        return str(self._parameters.get(self.settings.config_parameter, max_age=CONFIG_MAX_AGE_S))

    @cached_property
    def config_text(self) -> str:
        if self._config_text is not None:
            return self._config_text
        return "" if self.parts.config is not None else self.read_config_text()

    @cached_property
    def cluster_objects(self) -> tuple[dict[str, Any], ...]:
        """The EC2NodeClasses, NodePools and NodeOverlays in the cluster (none when the config reads pools from
        itself only)."""
        if self._cluster_objects is not None:
            return self._cluster_objects
        if self.parts.config is not None:
            return ()
        return self._read_cluster_objects()

    def _read_cluster_objects(self) -> tuple[dict[str, Any], ...]:
        from longshore.config import load_cluster_text

        deployed = load_cluster_text(self.config_text, self.config_source, region=self.settings.region)
        if deployed.pool_source == "config":
            return ()
        from longshore.adapters.kube.karpenter import KubeKarpenterObjects

        objects = KubeKarpenterObjects(self.kube_api, sleep=self.clock.sleep, budget=self.kube_budget)
        return (
            *objects.list_objects("EC2NodeClass"),
            *objects.list_objects("NodePool"),
            *objects.list_objects("NodeOverlay"),
        )

    @property
    def config_source(self) -> str:
        return f"ssm:{self.settings.config_parameter}"

    @cached_property
    def _merged(self) -> Any:
        from longshore.config.cluster_objects import merge_cluster_objects

        return merge_cluster_objects(
            self.config_text,
            self.config_source,
            self.cluster_objects,
            region=self.settings.region,
            cluster_name=self.settings.cluster_name,
        )

    @property
    def config(self) -> ClusterConfig:
        if self.parts.config is not None:
            return self.parts.config
        config: ClusterConfig = self._merged.config
        return config

    @property
    def pool_verdicts(self) -> tuple[Any, ...]:
        """What the merge said of each cluster object (`core.karpenter_objects.ObjectVerdict`)."""
        return () if self.parts.config is not None else tuple(self._merged.verdicts)

    def refreshed(self) -> Runtime | None:
        """A runtime on the config as it is now, or None when neither the parameter nor the objects changed
        (always None for a config given as parsed `parts.config`).

        Cheap enough for every pass: one `ssm:GetParameter`; when the text is unchanged and the pools come
        from the config alone, nothing else (no parse, no new runtime). With `poolSource` `cluster` or `both`
        the NodePools, EC2NodeClasses and NodeOverlays are listed too and compared by what the merge reads of
        them (never their status)."""
        if self.parts.config is not None:
            return None
        built_on = self.config_text  # read first: a runtime that never read its config compares with now's
        text = self.read_config_text()
        if text == built_on and self.config.pool_source == "config":  # the pools come from the text alone
            return None
        fresh = Runtime(
            self.settings,
            session=self._session,
            clock=self._injected_clock,
            config_text=text,
            kube_endpoint=self._kube_endpoint,
            metrics=self._injected_metrics,
            parts=self.parts,
        )
        fresh._clients = self._clients  # the clients and their connections stay
        kept_properties = ("session", "_parameters", "cluster_info", "kube_api", "kube_budget")
        for kept in kept_properties:  # so do the cluster's access and the invocation's time for it
            if kept in self.__dict__:
                fresh.__dict__[kept] = self.__dict__[kept]
        from longshore.config.cluster_objects import read_fingerprint

        if text == built_on and read_fingerprint(fresh.cluster_objects) == read_fingerprint(
            self.cluster_objects
        ):
            return None
        return fresh

    # -- the claim table ----------------------------------------------------------------------------------

    @cached_property
    def table(self) -> DynamoTable:
        from longshore.adapters.aws.dynamodb import DynamoTable

        return DynamoTable(self.client("dynamodb"), self.settings.table_name, sleep=self.clock.sleep)

    @cached_property
    def claims(self) -> DynamoClaimStore:
        from longshore.adapters.aws.dynamodb import DynamoClaimStore

        return DynamoClaimStore(self.table)

    @cached_property
    def offerings(self) -> DynamoOfferingAvailability:
        from longshore.adapters.aws.dynamodb import DynamoOfferingAvailability

        return DynamoOfferingAvailability(self.table)

    @cached_property
    def lease(self) -> DynamoLease:
        from longshore.adapters.aws.dynamodb import DynamoLease

        return DynamoLease(self.table)

    # -- the EKS cluster ----------------------------------------------------------------------------------

    @cached_property
    def cluster_info(self) -> ClusterInfo:
        from longshore.adapters.aws.eks import describe_cluster

        return describe_cluster(self.client("eks"), self.settings.cluster_name)

    @cached_property
    def kube_api(self) -> Any:
        """A `kubernetes` ApiClient on the cluster's endpoint (or `kube_endpoint`), with a refreshed token."""
        from longshore.adapters.aws.eks import TokenSource, api_client

        tokens = TokenSource.for_cluster(self.client("sts"), self.settings.cluster_name, self.clock.now)
        return api_client(self.cluster_info, tokens, endpoint=self._kube_endpoint)

    def kube_cluster(self, component: str = "longshore", *, cached: bool = False) -> Cluster:
        """`ports.kube.Cluster` on the API server; `component` is the source of the Events it posts.

        `cached`: unfiltered pod and node lists come from the container's list-then-watch cache of this
        cluster (`adapters.kube.informer`), shared by every pass of the warm container. In shadow mode, the
        cluster is read and never written (`adapters.shadow.ShadowCluster`)."""
        real = self._kube_cluster(component, cached=cached)
        if not self.shadow:
            return real
        from longshore.adapters.shadow import ShadowCluster

        return ShadowCluster(real)

    def _kube_cluster(self, component: str, *, cached: bool) -> Cluster:
        from longshore.adapters.kube.cluster import KubeCluster, new_cache
        from longshore.adapters.kube.informer import shared_cache

        extra: dict[str, Any] = {}
        if cached and self.parts.watch_cache:
            extra["cache"] = shared_cache(str(self.kube_api.configuration.host), new_cache)
        extra["budget"] = self.kube_budget
        if self._injected_clock is None:
            return KubeCluster(self.kube_api, component=component, **extra)
        clock = self._injected_clock
        return KubeCluster(self.kube_api, component=component, sleep=clock.sleep, now=clock.now, **extra)

    @cached_property
    def kube_budget(self) -> CallBudget:
        """The invocation's time for Kubernetes calls, shared by every Kubernetes adapter of this container
        (`adapters.kube.retry.CallBudget`): each invocation sets its deadline (`Container.ends_in`)."""
        from longshore.adapters.kube.retry import CallBudget

        return CallBudget(self.clock.now)

    @cached_property
    def karpenter_objects(self) -> KarpenterObjects:
        """Karpenter's NodePools, EC2NodeClasses and NodeClaims in the cluster (read-only in shadow mode)."""
        from longshore.adapters.kube.karpenter import KubeKarpenterObjects

        real = KubeKarpenterObjects(self.kube_api, sleep=self.clock.sleep, budget=self.kube_budget)
        if not self.shadow:
            return real
        from longshore.adapters.shadow import ShadowKarpenterObjects

        return ShadowKarpenterObjects(real)

    # -- EC2 ----------------------------------------------------------------------------------------------

    @cached_property
    def instances(self) -> Instances:
        """The cluster's instances (never terminated or tagged in shadow mode)."""
        from longshore.adapters.aws.instances import Ec2Instances

        real = Ec2Instances(self.client("ec2"), self.settings.cluster_name)
        if not self.shadow:
            return real
        from longshore.adapters.shadow import ShadowInstances

        return ShadowInstances(real)

    @cached_property
    def launcher(self) -> Launcher:
        """Launches claims through EC2 Fleet; in shadow mode, reports what it would launch and launches nothing."""
        if self.shadow:
            from longshore.adapters.shadow import ShadowLauncher

            return ShadowLauncher(self.metrics)
        from longshore.adapters.aws.fleet import Ec2Fleet
        from longshore.services.launch import ClaimLauncher

        fleet = Ec2Fleet(
            ec2=self.client("ec2"),
            ssm=self.client("ssm"),
            iam=self.lazy_client("iam"),
            cluster=self.cluster_info,
            sleep=self.clock.sleep,
        )
        return ClaimLauncher(
            fleet=fleet,
            config=self.config,
            store=self.claims,
            offerings=self.offerings,
            instances=self.instances,
            clock=self.clock,
        )

    @cached_property
    def reservations(self) -> CapacityReservations:
        """The node classes' capacity reservations (DescribeCapacityReservations, cached 60 s per term)."""
        from longshore.adapters.aws.reservations import Ec2CapacityReservations

        return Ec2CapacityReservations.on_subnets(self.client("ec2"))

    @cached_property
    def subnet_zones(self) -> tuple[str, ...]:
        """The zones the node classes have subnets in (EC2 DescribeSubnets per node class)."""
        from longshore.adapters.aws.network import node_class_zones

        ec2 = self.client("ec2")
        return tuple(sorted({zone for nc in self.config.node_classes for zone in node_class_zones(ec2, nc)}))

    def catalog_loader(self, zones: Iterable[str] | None = None) -> Callable[[], Catalog]:
        """Reads the priced catalog (offerings in `zones` only, when given) each time it is called."""
        if self.parts.catalog is not None:
            return self.parts.catalog
        pricing = self.lazy_client("pricing", PRICING_REGION)
        wanted = None if zones is None else tuple(zones)

        def catalog() -> Catalog:
            from longshore.adapters.aws import instance_types

            return instance_types.load_catalog(
                self.client("ec2"), pricing, self.settings.region, self.clock, zones=wanted
            )

        return catalog

    # -- Step Functions -----------------------------------------------------------------------------------

    @cached_property
    def workflows(self) -> SurgeWorkflow:
        """Starts disruption (surge ones too, and, when the function has its ARN, rotation) executions; in
        shadow mode, reports what it would start and starts nothing."""
        if self.parts.workflows is not None:
            return self.parts.workflows
        if self.shadow:
            from longshore.adapters.shadow import ShadowWorkflow

            return ShadowWorkflow(self.metrics)
        from longshore.wiring.surge import StepFunctionsSurgeWorkflow

        return StepFunctionsSurgeWorkflow(
            self.client("stepfunctions"),
            self.settings.require("disruption_state_machine_arn"),
            self.settings.rotation_state_machine_arn,
        )

    # -- the provisioner, as the interruption handler wakes it --------------------------------------------

    @cached_property
    def provisioner_trigger(self) -> ProvisionerTrigger:
        """Invokes the provisioner function asynchronously (or the trigger given in `parts`)."""
        if self.parts.provisioner_trigger is not None:
            return self.parts.provisioner_trigger
        from longshore.adapters.aws.lambda_trigger import LambdaProvisionerTrigger

        return LambdaProvisionerTrigger(
            self.client("lambda"), self.settings.require("provisioner_function_name")
        )
