"""The provisioner function, built from the production adapters (`build_provisioner`), and its container.

What it is made of: the container's `Runtime` gives the cluster config (the SSM parameter merged with the
cluster's NodePools and EC2NodeClasses), the `KubeCluster`, the DynamoDB claim store, offering availability
and lease, the EC2 instances, the claim launcher and the priced catalog restricted to the zones the node
classes have subnets in. All of these are resolved when it is built, so the first invocation's init is what
`bench/coldstart.py` measures; only IAM and Pricing wait until a launch or a price refresh needs them.
Karpenter's objects in the cluster are kept in step at the end of every invocation
(`services.karpenter_sync.publish`): the pools' and classes' status, a NodeClaim per launched claim, and the
`deleted` disruption of the node of every NodeClaim a user deleted (`kubectl delete nodeclaim`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longshore.core.catalog import Catalog
from longshore.core.karpenter_objects import ObjectVerdict
from longshore.core.model import ClusterConfig
from longshore.ports.clock import Clock
from longshore.ports.cloud import CapacityReservations, Instances, Launcher, PlacementGroups
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, Lease, OfferingAvailability
from longshore.ports.workflow import DisruptionWorkflow
from longshore.services import buffer_pods
from longshore.services.karpenter_sync import KarpenterObjectSync, publish
from longshore.services.provisioner import ProvisionerService, ProvisionerSettings
from longshore.services.reservation_sync import class_reservations
from longshore.wiring.container import Container
from longshore.wiring.runtime import Runtime

log = logging.getLogger(__name__)


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
    karpenter: KarpenterObjectSync | None = None
    workflow: DisruptionWorkflow | None = None  # drains deleted Nodes; None: no state machine ARN configured
    verdicts: tuple[ObjectVerdict, ...] = field(default=())
    reservations: CapacityReservations | None = None  # the node classes' capacity reservations
    placement_groups: PlacementGroups | None = None  # the node classes' placement groups (partitions)

    def service(
        self,
        owner: str,
        settings: ProvisionerSettings | None = None,
        previous: ProvisionerService | None = None,
    ) -> ProvisionerService:
        """The service of one run of `owner`; with `previous`, it takes that run over (a rebuilt config)."""
        service = ProvisionerService(
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
            settings=settings or ProvisionerSettings.from_config(self.config),
            workflow=self.workflow,
            buffers=buffer_pods.source_of(self.cluster, self.config),
            reservations=self.reservations,
            placement_groups=self.placement_groups,
        )
        if previous is not None:
            service.take_over(previous)
        return service

    def publish_objects(self) -> None:
        """Karpenter's objects in step with this invocation's view, and deleted NodeClaims' nodes disrupted
        (`services.karpenter_sync.publish`); a failure is logged, never raised."""
        if self.karpenter is None:
            return
        try:
            now = self.clock.now()
            reserved, failures = class_reservations(self.reservations, self.config, now)
            publish(self.karpenter, self.store.list(), self.verdicts, self.workflow, now, reserved, failures)
        except Exception as error:  # the next invocation writes them again
            log.warning("could not update Karpenter's objects", extra={"error": str(error)})


def build_provisioner(wiring: Runtime, sink: MetricsSink | None = None) -> ProvisionerRuntime:
    """Wire the production adapters of one container (`sink`: where metrics go; default `wiring.metrics`, EMF
    through Powertools). In shadow mode the runtime hands out the `adapters.shadow` stand-ins."""
    from longshore.adapters.aws.network import Ec2PlacementGroups

    cluster = wiring.kube_cluster(cached=True)  # the container's watch cache of pods and nodes
    return ProvisionerRuntime(
        config=wiring.config,
        cluster=cluster,
        store=wiring.claims,
        offerings=wiring.offerings,
        lease=wiring.lease,
        launcher=wiring.launcher,
        instances=wiring.instances,
        catalog=wiring.catalog_loader(wiring.subnet_zones),
        clock=wiring.clock,
        metrics=sink if sink is not None else wiring.metrics,
        config_text=wiring.config_text,
        karpenter=KarpenterObjectSync(wiring.karpenter_objects, cluster, wiring.clock),
        verdicts=wiring.pool_verdicts,
        workflow=wiring.workflows if wiring.settings.disruption_state_machine_arn else None,
        reservations=wiring.reservations,
        placement_groups=Ec2PlacementGroups(wiring.client("ec2")),
    )


def reloader(
    container: Container[ProvisionerRuntime], owner: str, settings: ProvisionerSettings | None = None
) -> Callable[[ProvisionerService], ProvisionerService | None]:
    """What `run_invocation` calls before each later pass: the service on the container's runtime rebuilt on
    a changed cluster config (`Container.refresh`), taking the run over; None while the config is unchanged."""

    def reload(previous: ProvisionerService) -> ProvisionerService | None:
        fresh = container.refresh()
        return None if fresh is None else fresh.service(owner, settings, previous=previous)

    return reload


def build_runtime(settings: Any, **options: Any) -> ProvisionerRuntime:
    """The provisioner of a `Runtime(settings, **options)` (tests: moto and the API emulator)."""
    sink = options.pop("sink", None)
    return build_provisioner(Runtime(settings, metrics=sink, **options), sink)


CONTAINER: Container[ProvisionerRuntime] = Container(build_provisioner)
