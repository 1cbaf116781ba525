"""`longshore plan`: a dry run of the packing engine on manifests, as a table or as JSON.

Theory of operation: the cluster comes from `--config` (the config loader, every error reported with file and
line), pending pods and DaemonSets from `--pods` (Pod, Deployment, ReplicaSet, StatefulSet, Job, DaemonSet
manifests; replicas expanded), existing nodes and their pods from `--nodes` (Node manifests plus pods with
`spec.nodeName`). The instance catalog is EC2's: the DescribeInstanceTypes / DescribeInstanceTypeOfferings
shapes shipped for the region (`longshore/data/ec2/`), priced from `longshore/data/prices.json`, assembled by the production
adapter (`adapters.aws.instance_types.build_catalog`); nothing leaves the machine. `--reservations FILE` adds
the capacity reservations the node classes select from a DescribeCapacityReservations answer
(`cli.reservations`), planned as the provisioner plans them: reserved before spot before on-demand, never more
claims in a reservation than its `AvailableInstanceCount`. `--placement-groups FILE` adds the placement groups
the node classes select from a DescribePlacementGroups answer (`cli.placement_groups`): a partition group's
partitions become offerings, as in the provisioner's plan. The engine runs once; the table shows the claims
(pool, instance type, zone, capacity type and reservation, $/h, pod count), where every pod goes and why the
rest cannot run. `--json` prints `Plan.to_dict()` (schema in docs/scheduling.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import click

from longshore.cli.explain import cluster_options
from longshore.cli.options import config_options, load_from_options
from longshore.cli.placement_groups import placement_groups_option, read_placement_groups
from longshore.cli.reservations import read_reservations, reservations_option
from longshore.config.errors import ConfigErrors
from longshore.config.workloads import Workloads, load_workloads
from longshore.core.catalog import Catalog
from longshore.core.scheduling import Plan, SchedulingInput, solve


def offline_catalog(region: str) -> Catalog:
    """EC2's instance shapes and zone offerings for `region` as the package ships them, priced from the shipped table."""
    from longshore.adapters.aws.instance_types import OfflineDataMissing
    from longshore.adapters.aws.instance_types import offline_catalog as build

    try:
        return build(region)
    except OfflineDataMissing as exc:
        raise click.ClickException(f"no offline instance data for region {region!r}: {exc}") from exc


def _replicas(values: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for value in values:
        name, _, count = value.partition("=")
        if not name or not count.isdigit():
            raise click.BadParameter(f"expected NAME=COUNT, got {value!r}", param_hint="--replicas")
        found[name] = int(count)
    return found


def _load(paths: Sequence[Path], replicas: dict[str, int]) -> Workloads:
    try:
        return load_workloads(paths, replicas=replicas)
    except ConfigErrors as errors:
        click.secho(errors.summary().splitlines()[0], fg="red", bold=True, err=True)
        for error in errors:
            click.echo(f"  {error}", err=True)
        raise click.exceptions.Exit(2) from None


def _table(plan: Plan) -> str:
    lines = []
    if plan.new_claims:
        lines.append(
            f"{'claim':<24} {'pool':<22} {'instance type':<16} {'zone':<16} {'capacity':<10} "
            f"{'$/h':>9} {'pods':>5}"
            + ("  reservation" if any(claim.reservation_id for claim in plan.new_claims) else "")
        )
        for claim in plan.new_claims:
            lines.append(
                f"{claim.name:<24} {claim.nodepool:<22} {claim.instance_type:<16} {claim.zone:<16} "
                f"{claim.capacity_type:<10} {claim.price_per_hour:>9.4f} {len(claim.pods):>5}"
                + (f"  {claim.reservation_id}" if claim.reservation_id else "")
            )
        lines.append(f"{len(plan.new_claims)} new node(s), ${plan.cost_per_hour:.4f} per hour")
    else:
        lines.append("no new nodes")
    lines.append("")
    placements = plan.placements()
    if placements:
        lines.append("placements:")
        for pod, node in placements.items():
            lines.append(f"  {pod} -> {node}")
    if plan.unschedulable:
        lines.append("")
        lines.append("unschedulable:")
        for pod, reason in plan.unschedulable:
            lines.append(f"  {pod}: {reason}")
    return "\n".join(lines)


@click.command(name="plan")
@config_options
@click.option(
    "--pods",
    "pod_paths",
    multiple=True,
    type=click.Path(path_type=Path, exists=True),
    help="Manifests of pending pods (Pod, Deployment, StatefulSet, Job, DaemonSet); repeatable. Without it, "
    "the pods pending now in the cluster that --kubeconfig/--context (or --server) reach, read-only.",
)
@click.option(
    "--nodes",
    "node_paths",
    multiple=True,
    type=click.Path(path_type=Path, exists=True),
    help="Node manifests, with the pods bound to them (spec.nodeName); repeatable.",
)
@click.option(
    "--replicas",
    "replica_overrides",
    multiple=True,
    metavar="NAME=COUNT",
    help="Override the replica count of a Deployment/StatefulSet/Job (e.g. inflate=5).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (the documented schema).")
@reservations_option
@placement_groups_option
@cluster_options
def command(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    pod_paths: tuple[Path, ...],
    node_paths: tuple[Path, ...],
    replica_overrides: tuple[str, ...],
    as_json: bool,
    reservations_path: Path | None,
    placement_groups_path: Path | None,
    kubeconfig: Path | None,
    kube_context: str | None,
    server: str | None,
    token: str | None,
) -> None:
    """Plan node claims for pending pods: a dry run of the packing engine."""
    if not pod_paths:
        from longshore.cli.status import live_plan

        plan = live_plan(
            config_paths,
            region,
            cluster_name,
            kubeconfig,
            kube_context,
            server,
            token,
            reservations_path,
            placement_groups_path,
        )
        click.echo(json.dumps(plan.to_dict(), indent=2) if as_json else _table(plan))
        return
    config = load_from_options(config_paths, region, cluster_name)
    replicas = _replicas(replica_overrides)
    workloads = _load(pod_paths, replicas)
    existing = _load(node_paths, replicas) if node_paths else Workloads()
    catalog = offline_catalog(config.region)
    nodes = tuple(n for n in existing.nodes if not n.in_flight)
    inp = SchedulingInput(
        pods=workloads.pods + existing.pods,
        pools=config.node_pools,
        node_classes=config.node_classes,
        catalog=catalog,
        nodes=nodes,
        daemonsets=workloads.daemonsets + existing.daemonsets,
        settings=config.settings,
        reservations=read_reservations(reservations_path, config, catalog, time.time()),
        placement_groups=read_placement_groups(placement_groups_path, config),
    )
    plan = solve(inp)
    if as_json:
        click.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        click.echo(_table(plan))
