"""The provisioner Lambda: started every minute and by the trigger, provisioning passes until a quiet one.

Theory of operation: EventBridge invokes the function once a minute, and the trigger function (the admission
webhook) when an unbound pod is created; reserved concurrency 1. `handler` gets
the container's `ProvisionerRuntime` (built once per cold start by `build_runtime`, rebuilt only when the
cluster config in SSM changes), makes a `ProvisionerService` whose lease owner is the invocation's request id,
and runs `services.provisioner.run_invocation`: passes until one is quiet or `deadline_margin_s` before
`context.get_remaining_time_in_millis()` runs out, sleeping `poll_s` between passes that found nothing to do,
then releasing the lease so the next invocation need not wait for it to expire.

Wiring (`build_runtime`): the container's `handlers.runtime.Runtime` (from `RuntimeSettings`, the function's
environment) gives the cluster config (the SSM parameter through Powertools parameters, cached 5 min), the
`KubeCluster`, the DynamoDB claim store, offering availability and lease, the EC2 instances, the fleet
launcher and the priced catalog, restricted to the zones the node classes have subnets in. All of these are
resolved by `runtime()`, so the first invocation's init is what `bench/coldstart.py` measures; only IAM and
Pricing wait until a launch or a price refresh needs them.

Cold start is kept low by importing only Powertools and the service at module level; boto3, kubernetes and
pydantic are imported by the `Runtime` when it builds the adapters. Logger, Metrics and Tracer come from
Powertools; metrics go out as EMF through `PowertoolsMetricsSink`. `configure()` installs a runtime built
elsewhere (tests: moto and the API emulator).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.core import telemetry
from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig
from longshore.handlers.runtime import Runtime
from longshore.ports.clock import Clock
from longshore.ports.cloud import Instances, Launcher
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, Lease, OfferingAvailability
from longshore.services.provisioner import ProvisionerService, ProvisionerSettings, run_invocation

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "longshore"))
tracer = Tracer()
metrics = Metrics(namespace=telemetry.NAMESPACE)


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
    wiring = Runtime(
        settings, session=session, clock=clock, config_text=config_text, kube_endpoint=kube_endpoint
    )
    return _provisioner_runtime(wiring, sink)


def _provisioner_runtime(wiring: Runtime, sink: MetricsSink | None = None) -> ProvisionerRuntime:
    from longshore.adapters.powertools_metrics import PowertoolsMetricsSink

    return ProvisionerRuntime(
        config=wiring.config,
        cluster=wiring.kube_cluster(cached=True),
        store=wiring.claims,
        offerings=wiring.offerings,
        lease=wiring.lease,
        launcher=wiring.launcher,
        instances=wiring.instances,
        catalog=wiring.catalog_loader(wiring.subnet_zones),
        clock=wiring.clock,
        metrics=sink or PowertoolsMetricsSink(metrics),
        config_text=wiring.config_text,
    )


_runtime: ProvisionerRuntime | None = None
_wiring: Runtime | None = None


def configure(runtime: ProvisionerRuntime | None) -> None:
    """Install the runtime `handler` uses (None: build the production one on the next call)."""
    global _runtime, _wiring
    _runtime, _wiring = runtime, None


def runtime() -> ProvisionerRuntime:
    """The container's runtime: built on first use (the cold start's init), rebuilt when the config changes
    (the parameter is read again once its Powertools cache entry is older than `CONFIG_MAX_AGE_S`)."""
    global _runtime, _wiring
    if _runtime is None:
        _wiring = Runtime.from_env()
        _runtime = _provisioner_runtime(_wiring)
    elif _wiring is not None:
        text = _wiring.read_config_text()
        if text != _runtime.config_text:
            parameter = _wiring.settings.config_parameter
            logger.info("the cluster config changed; rewiring", extra={"parameter": parameter})
            _wiring = Runtime(_wiring.settings, config_text=text)
            _runtime = _provisioner_runtime(_wiring)
    return _runtime


@metrics.log_metrics
@tracer.capture_lambda_handler
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Schedule and trigger entry point: run provisioner passes until a quiet one (or the deadline)."""
    current = runtime()
    service = current.service(owner=context.aws_request_id)

    def remaining_s() -> float:
        return context.get_remaining_time_in_millis() / 1000.0

    report = run_invocation(service, remaining_s=remaining_s, idle_wait=current.clock.sleep)
    logger.info("provisioner invocation finished", extra=report.to_dict())
    return report.to_dict()
