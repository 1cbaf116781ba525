"""The disruption planner function, built from the production adapters (`build_planner`), and its container.

The planner of a container holds the cluster config it was built with (rebuilt when the config changes), the
claim table, the EKS API through the kubernetes client, the disruption state machine (with surge starts: a
disruption whose replacement the planner already launched carries that claim, which the workflow's
LaunchReplacement step adopts instead of launching another), the claim launcher for replacements, the AMI
resolver for drift, and Karpenter's NodeClaims, whose Drifted, Consolidatable and Disrupting conditions it
writes after each pass (`services.claim_conditions`), EC2's instance status checks for node auto-repair, and the
node classes' placement groups, looked up as the provisioner does (`services.placement_groups`). `process` is
one invocation's loop: a pass, then another whenever `next_pass_at` asks for one within the remaining time,
each later pass on the config as it is then (`CONTAINER.refresh`).
"""

from __future__ import annotations

from collections.abc import Callable

from longshore.services.disruption import DisruptionService, PassReport
from longshore.services.disruption_invocation import PlannerInvocation, run_invocation
from longshore.wiring.container import Container
from longshore.wiring.observability import logger
from longshore.wiring.runtime import Runtime
from longshore.wiring.surge import StepFunctionsSurgeWorkflow

__all__ = ["CONTAINER", "StepFunctionsSurgeWorkflow", "build_planner", "carry", "process"]

DEADLINE_MARGIN_S = 15.0


def build_planner(wiring: Runtime) -> DisruptionService:
    """The planner of one container, on the production adapters (names in docs/contracts.md)."""
    from longshore.adapters.aws.amis import AmiResolver, ResolvedImages
    from longshore.adapters.aws.instances import Ec2InstanceStatuses
    from longshore.adapters.aws.network import Ec2PlacementGroups
    from longshore.services.claim_conditions import NodeClaimConditions
    from longshore.services.disruption import PlannerPorts
    from longshore.services.karpenter_sync import KarpenterObjectSync

    config, clock = wiring.config, wiring.clock
    ec2, ssm = wiring.client("ec2"), wiring.client("ssm")
    cluster = wiring.kube_cluster("longshore-disruption", cached=True)
    ports = PlannerPorts(
        cluster=cluster,
        claims=wiring.claims,
        offerings=wiring.offerings,
        workflow=wiring.workflows,  # Step Functions with surge starts (shadow mode: starts nothing)
        launcher=wiring.launcher,
        clock=clock,
        metrics=wiring.metrics,
        images=ResolvedImages(lambda: AmiResolver(ssm, ec2), config.kubernetes_version, clock.now),
        lease=wiring.lease,
        conditions=NodeClaimConditions(KarpenterObjectSync(wiring.karpenter_objects, cluster, clock)),
        instance_statuses=Ec2InstanceStatuses(ec2),  # node auto-repair's EC2 status checks
        placement_groups=Ec2PlacementGroups(ec2),  # the replacements' partitions, as the provisioner's
    )
    return DisruptionService(config, wiring.catalog_loader(), ports, logger)


def process(
    service: DisruptionService,
    remaining_s: Callable[[], float],
    wait: Callable[[float], None],
    owner: str = "",
    reload: Callable[[], DisruptionService | None] | None = None,
) -> PlannerInvocation:
    """The invocation's loop, without the Lambda wiring; `owner` (the request id) holds the planner lease;
    `reload` (the handler's: `CONTAINER.refresh`) gives the planner on a changed config before each later pass."""

    def log_pass(report: PassReport) -> None:
        logger.info("planner pass", extra=report.to_dict())

    return run_invocation(
        service,
        remaining_s=remaining_s,
        wait=wait,
        margin_s=DEADLINE_MARGIN_S,
        on_pass=log_pass,
        owner=owner,
        reload=reload,
    )


def carry(old: DisruptionService, new: DisruptionService) -> None:
    """A planner rebuilt on a changed config continues from the old one's memory (`take_over`)."""
    new.take_over(old)


CONTAINER: Container[DisruptionService] = Container(build_planner, carry=carry)
