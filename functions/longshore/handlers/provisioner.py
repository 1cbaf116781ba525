"""The provisioner Lambda: started every minute, provisioning passes until shortly before its timeout.

Theory of operation: EventBridge invokes the function once a minute (reserved concurrency 1). `handler` gets
the container's `ProvisionerRuntime` (built once per cold start by `build_runtime`, rebuilt only when the
cluster config in SSM changes), makes a `ProvisionerService` whose lease owner is the invocation's request id,
and runs `services.provisioner.run_invocation`: passes until `deadline_margin_s` before
`context.get_remaining_time_in_millis()` runs out, sleeping `poll_s` between passes that found nothing to do,
then releasing the lease so the next invocation need not wait for it to expire.

Wiring (`build_runtime`), all from `RuntimeSettings` (the function's environment):
- boto3 clients with Longshore's retry configuration (botocore standard mode, then our bounded backoff);
- the cluster config: the SSM parameter's YAML, read through Powertools parameters (cached 5 min) and loaded
  with `config.load_cluster_text`;
- cluster access: endpoint and CA from `eks:DescribeCluster`, a presigned-STS bearer token refreshed before
  it expires, and the `kubernetes` client (36.0.3, see docs/provisioning.md for why) behind `KubeCluster`;
- the DynamoDB claim store, offering availability and lease; the EC2 instances, the fleet launcher and the
  priced catalog, restricted to the zones the node classes have subnets in.

Cold start is kept low by importing only Powertools and the service at module level; boto3, kubernetes and
pydantic are imported inside `build_runtime`, whose cost is the "init" half of the measured cold start
(`bench/coldstart.py`). Logger, Metrics and Tracer come from Powertools; metrics go out as EMF through
`PowertoolsMetricsSink`. `configure()` installs a runtime built elsewhere (tests: moto and the API emulator).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.core import telemetry
from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig
from longshore.ports.clock import Clock
from longshore.ports.cloud import Instances, Launcher
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, Lease, OfferingAvailability
from longshore.services.provisioner import ProvisionerService, ProvisionerSettings, run_invocation

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))
tracer = Tracer()
metrics = Metrics(namespace=telemetry.NAMESPACE)

CONFIG_MAX_AGE_S = 300


class WallClock:
    """The real clock (`ports.clock.Clock`)."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class ProvisionerRuntime:
    """Everything one container needs to run provisioner passes (built once, reused by warm invocations)."""

    config: ClusterConfig
    cluster: Cluster
    store: ClaimStore
    offerings: OfferingAvailability
    lease: Lease
    launcher: Launcher
    instances: Instances
    catalog: Callable[[], Catalog]
    clock: Clock
    metrics: MetricsSink
    config_text: str = ""

    def service(self, owner: str) -> ProvisionerService:
        return ProvisionerService(
            cluster=self.cluster,
            store=self.store,
            offerings=self.offerings,
            lease=self.lease,
            launcher=self.launcher,
            instances=self.instances,
            catalog=self.catalog,
            config=self.config,
            clock=self.clock,
            metrics=self.metrics,
            owner=owner,
            settings=ProvisionerSettings.from_config(self.config),
        )


class LazyClient:
    """A boto3 client created on first use: IAM and Pricing are needed only to launch or refresh prices, so
    they are kept off the cold start."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            self._client = self._make()
        return getattr(self._client, name)


def read_config_text(parameter: str, ssm: Any) -> str:
    """The cluster config YAML from the SSM parameter, through Powertools parameters (cached 5 min)."""
    from aws_lambda_powertools.utilities import parameters

    provider = parameters.SSMProvider(boto3_client=ssm)
    return str(provider.get(parameter, max_age=CONFIG_MAX_AGE_S))


def build_runtime(
    settings: Any,
    *,
    session: Any = None,
    config_text: str | None = None,
    kube_endpoint: str | None = None,
    clock: Clock | None = None,
    sink: MetricsSink | None = None,
) -> ProvisionerRuntime:
    """Wire the production adapters from `RuntimeSettings` (`kube_endpoint` overrides the EKS endpoint)."""
    import boto3  # type: ignore[import-untyped]

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
    from longshore.adapters.aws.network import select_subnets
    from longshore.adapters.kube.cluster import KubeCluster
    from longshore.adapters.powertools_metrics import PowertoolsMetricsSink
    from longshore.config import load_cluster_text

    clock = clock or WallClock()
    session = session or boto3.session.Session(region_name=settings.region)
    region = settings.region
    ssm = retry.client(session, "ssm", region)
    text = config_text if config_text is not None else read_config_text(settings.config_parameter, ssm)
    config = load_cluster_text(
        text, f"ssm:{settings.config_parameter}", region=region, cluster_name=settings.cluster_name
    )
    ec2 = retry.client(session, "ec2", region)
    info = describe_cluster(retry.client(session, "eks", region), settings.cluster_name)
    tokens = TokenSource.for_cluster(retry.client(session, "sts", region), settings.cluster_name, clock.now)
    kube = KubeCluster(api_client(info, tokens, endpoint=kube_endpoint), sleep=clock.sleep, now=clock.now)
    table = DynamoTable(retry.client(session, "dynamodb", region), settings.table_name)
    store = DynamoClaimStore(table)
    offerings = DynamoOfferingAvailability(table)
    instances = Ec2Instances(ec2, settings.cluster_name)
    launcher = Ec2Launcher(
        ec2=ec2,
        ssm=ssm,
        iam=LazyClient(lambda: retry.client(session, "iam", region)),
        cluster=info,
        config=config,
        store=store,
        offerings=offerings,
        instances=instances,
        sleep=clock.sleep,
    )
    zones = sorted(
        {s.zone for nc in config.node_classes for s in select_subnets(ec2, nc.subnet_selector_terms, nc.name)}
    )
    pricing = LazyClient(lambda: retry.client(session, "pricing", "us-east-1"))

    def catalog() -> Catalog:
        return load_catalog(ec2, pricing, region, clock, zones=zones)

    return ProvisionerRuntime(
        config=config,
        cluster=kube,
        store=store,
        offerings=offerings,
        lease=DynamoLease(table),
        launcher=launcher,
        instances=instances,
        catalog=catalog,
        clock=clock,
        metrics=sink or PowertoolsMetricsSink(metrics),
        config_text=text,
    )


_runtime: ProvisionerRuntime | None = None
_settings: Any = None
_checked_at = 0.0


def configure(runtime: ProvisionerRuntime | None) -> None:
    """Install the runtime `handler` uses (None: build the production one on the next call)."""
    global _runtime, _settings
    _runtime, _settings = runtime, None


def runtime() -> ProvisionerRuntime:
    """The container's runtime: built on first use (the cold start's init), rebuilt when the config changes."""
    global _runtime, _settings, _checked_at
    if _runtime is None:
        from longshore.config.settings import RuntimeSettings

        _settings = RuntimeSettings.from_env()
        _runtime = build_runtime(_settings)
        _checked_at = time.monotonic()
    elif _settings is not None and time.monotonic() - _checked_at >= CONFIG_MAX_AGE_S:
        _checked_at = time.monotonic()
        import boto3  # type: ignore[import-untyped]

        from longshore.adapters.aws import retry

        ssm = retry.client(boto3.session.Session(region_name=_settings.region), "ssm", _settings.region)
        text = read_config_text(_settings.config_parameter, ssm)
        if text != _runtime.config_text:
            logger.info(
                "the cluster config changed; rewiring", extra={"parameter": _settings.config_parameter}
            )
            _runtime = build_runtime(_settings, config_text=text)
    return _runtime


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """EventBridge schedule entry point: run provisioner passes until shortly before the timeout."""
    current = runtime()
    service = current.service(owner=context.aws_request_id)

    def remaining_s() -> float:
        return context.get_remaining_time_in_millis() / 1000.0

    def idle_wait(seconds: float) -> bool:
        current.clock.sleep(seconds)
        return True

    report = run_invocation(service, remaining_s=remaining_s, idle_wait=idle_wait)
    logger.info("provisioner invocation finished", extra=report.to_dict())
    return report.to_dict()
