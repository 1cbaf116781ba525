"""`longshore status`: what Longshore would do in a live cluster right now, read-only.

Theory of operation: the command reads the cluster the way the functions do (pods, nodes, PDBs, DaemonSets;
the `karpenter.sh` NodePools and `karpenter.k8s.aws` EC2NodeClasses merged with `--config` by its
`poolSource`, as `config.cluster_objects` does), takes the claims from `--table` or `--claims` or, by default,
from the NodeClaim objects in the cluster (Karpenter's own, so a team can point it at a cluster Karpenter runs
today), and asks the same pure code the functions run: the packing engine for the pods pending now, the
disruption planner for every node. It prints the pools (source, readiness, nodes, $/h), what would be
launched and what it costs (CapacityBuffers' virtual pods included, planned after the real ones; each buffer,
from the config file or the cluster, with where its virtual pods would go), what would be disrupted and what it saves, and why every other node is left alone.
Nothing is written: no status, no Event, no AWS call (prices come from the shipped table unless `--live`,
which also asks EC2 for the placement groups; both are reads).
The node classes' placement groups are looked up as the planner looks them up (`cli.placement_groups`): from
`--placement-groups FILE`, else from EC2 with `--live`, else not at all (the partition key open). The launch
offers their partitions as the provisioner does (a class whose lookup failed is planned with the key open);
the disruption part is the planner's own, which refuses replacements in such a class this pass (its nodes are
left alone with that reason, empty ones may still go); `placement_groups` lists what was found and why a
lookup failed.

`--json` prints {"cluster", "pools": [...], "placement_groups": {"found": {...}, "unresolved": {...}},
"launch": {...}, "buffers": [...], "disruption": {...}, "cost_per_hour": {...}}.
Exit status: 0, or 2 for bad options or an invalid `--config`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from longshore.cli.explain import (
    claim_store,
    cluster_claims,
    cluster_options,
    kube_api_client,
    load_catalog_for,
    store_options,
)
from longshore.cli.options import config_options, load_from_options, print_config_errors
from longshore.cli.placement_groups import (
    PLANNED_OPEN,
    REFUSED,
    placement_groups_option,
    placement_groups_port,
)
from longshore.config import ConfigErrors
from longshore.core.karpenter_objects import ObjectVerdict
from longshore.core.model import ClusterConfig
from longshore.ports.store import ClaimStore


def live_config(
    config_paths: tuple[Path, ...], region: str, cluster_name: str, objects: Any
) -> tuple[ClusterConfig, tuple[ObjectVerdict, ...]]:
    import yaml

    from longshore.config.cluster_objects import merge_cluster_objects
    from longshore.config.loader import bundle_cluster

    if config_paths:
        load_from_options(config_paths, region, cluster_name)  # prints every error and exits 2
        text, source = bundle_cluster(config_paths, region=region, cluster_name=cluster_name), "--config"
    else:
        cluster = {
            "apiVersion": "longshore.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": cluster_name},
            "spec": {"region": region, "poolSource": "cluster"},
        }
        text, source = yaml.safe_dump(cluster), "(the cluster)"
    listed = [*objects.list_objects("EC2NodeClass"), *objects.list_objects("NodePool")]
    try:
        merged = merge_cluster_objects(text, source, listed, region=region, cluster_name=cluster_name)
    except ConfigErrors as errors:
        print_config_errors(errors)
        raise click.exceptions.Exit(2) from None
    return merged.config, merged.verdicts


def _solve_pending(
    config: ClusterConfig, snapshot: Any, reservations: Any = (), placement_groups: Any = ()
) -> Any:
    """The provisioner's plan: the pending pods, then the CapacityBuffers' virtual pods (`buffer_pods`), with
    the node classes' capacity reservations (`core.reservations.ByClass`) and placement groups
    (`core.placement_groups.ByClass`) when given."""
    from longshore.core.scheduling import SchedulingInput
    from longshore.services.buffer_pods import plan_with_buffers

    inp = snapshot.input
    return plan_with_buffers(
        SchedulingInput(
            pods=inp.pending,
            pools=config.pools_by_weight(),
            node_classes=config.node_classes,
            catalog=inp.catalog,
            nodes=tuple((*(n.node for n in inp.nodes if not n.disrupting), *inp.unmanaged)),
            in_flight=inp.in_flight,
            daemonsets=inp.daemonsets,
            unavailable=inp.unavailable,
            settings=config.settings,
            reservations=reservations,
            placement_groups=placement_groups,
        ),
        inp.buffers,
    )


def _buffers_report(buffers: Any, plan: Any) -> list[dict[str, Any]]:
    """Each CapacityBuffer (config file and cluster): where its virtual pods would go (`core.buffer_status`)."""
    from longshore.core.buffer_status import Placement, describe

    if buffers is None:
        return []
    placements = Placement.of(plan, buffers.resolved)
    rows: list[dict[str, Any]] = []
    for item in buffers.resolved:
        placement = placements[item.buffer.key]
        rows.append(
            {
                "name": item.buffer.key,
                "source": item.buffer.origin or "cluster",
                "ready": item.ready,
                "reason": item.reason,
                "replicas": len(item.pods),
                "on_existing": placement.existing,
                "on_new": placement.new,
                "unplaced": placement.unplaced,
                "summary": describe(item, placement),
            }
        )
    for error in buffers.invalid:
        rows.append({"name": error.buffer, "source": "cluster", "ready": False, "reason": str(error)})
        rows[-1]["summary"] = f"{error.buffer} (cluster): not ready: {error}"
    return rows


def _groups_report(inp: Any, failures: Mapping[str, str]) -> dict[str, Any]:
    """The placement groups the snapshot's lookup found (node class -> group) and why the others were not."""
    found = {
        name: {
            "id": group.group_id,
            "name": group.name,
            "strategy": group.strategy,
            "partitions": group.partition_count,
        }
        for name, group in inp.placement_groups
    }
    unresolved = {
        name: failures.get(name) or "the lookup failed" for name in sorted(inp.placement_unresolved)
    }
    return {"found": found, "unresolved": unresolved}


def build_report(
    config: ClusterConfig,
    verdicts: tuple[ObjectVerdict, ...],
    snapshot: Any,
    buffers: Any = None,
    placement_failures: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`buffers`: a `services.buffer_pods.BufferPass` read with the snapshot (None: no buffer section rows);
    `placement_failures`: node class -> why its placement group was not looked up (`cli.placement_groups`)."""
    from longshore.core.disruption import planner
    from longshore.services.disruption_events import describe_decision

    inp = snapshot.input
    plan = _solve_pending(config, snapshot, placement_groups=inp.placement_groups)
    disruption = planner.plan(inp)
    decided = {name for d in disruption.decisions for name in d.node_names}
    invalid = {(v.kind, v.name): v for v in verdicts if not v.valid}
    pools = []
    for pool in config.pools_by_weight():
        nodes = [n for n in inp.nodes if n.nodepool == pool.name]
        pools.append(
            {
                "name": pool.name,
                "source": pool.origin.file,
                "ready": True,
                "nodes": len(nodes),
                "cost_per_hour": round(sum(n.price for n in nodes), 4),
            }
        )
    pools += [
        {
            "name": v.name,
            "source": v.ref,
            "ready": False,
            "reason": v.message,
            "nodes": 0,
            "cost_per_hour": 0.0,
        }
        for (kind, _), v in sorted(invalid.items())
        if kind == "NodePool"
    ]
    virtual = {p.key for p in inp.buffers}
    launch_cost = sum(c.price_per_hour for c in plan.new_claims)
    saved = sum(d.savings_per_hour for d in disruption.decisions)
    current = sum(n.price for n in inp.nodes)
    return {
        "cluster": config.name,
        "pools": pools,
        "placement_groups": _groups_report(inp, placement_failures or {}),
        "launch": {
            "pending_pods": len(inp.pending),
            "claims": [
                {
                    "pool": c.nodepool,
                    "instance_type": c.instance_type,
                    "capacity_type": c.capacity_type,
                    "zone": c.zone,
                    "pods": len(c.pods),
                    "cost_per_hour": round(c.price_per_hour, 4),
                }
                for c in plan.new_claims
            ],
            "fits_existing": sum(1 for p in plan.existing for key in p.pods if key not in virtual),
            "unschedulable": [{"pod": key, "reason": reason} for key, reason in plan.unschedulable],
        },
        "buffers": _buffers_report(buffers, plan),
        "disruption": {
            "decisions": [describe_decision(d) for d in disruption.decisions],
            "left_alone": {
                n.node.name: disruption.reason_for(n.node.name) or "nothing to do"
                for n in inp.nodes
                if n.node.name not in decided
            },
            "not_managed": sorted(n.name for n in inp.unmanaged),
        },
        "cost_per_hour": {
            "now": round(current, 4),
            "would_launch": round(launch_cost, 4),
            "would_save": round(saved, 4),
        },
    }


def _print(report: dict[str, Any]) -> None:
    cost = report["cost_per_hour"]
    click.secho(f"cluster {report['cluster']}: ${cost['now']:.4f}/h now", bold=True)
    click.echo("pools:")
    for pool in report["pools"]:
        state = "ready" if pool["ready"] else f"NOT READY: {pool['reason']}"
        click.echo(
            f"  {pool['name']:<20} {pool['nodes']:>4} nodes  ${pool['cost_per_hour']:.4f}/h  {state}  ({pool['source']})"
        )
    groups = report["placement_groups"]
    if groups["found"] or groups["unresolved"]:
        click.echo("placement groups:")
    for node_class, group in groups["found"].items():
        partitions = f", {group['partitions']} partitions" if group["partitions"] else ""
        click.echo(
            f"  EC2NodeClass {node_class}: placement group {group['name']} ({group['id']}, "
            f"{group['strategy']}{partitions})"
        )
    for node_class, why in groups["unresolved"].items():
        click.echo(f"  EC2NodeClass {node_class}: placement group not looked up: {why}")
    launch = report["launch"]
    click.echo(
        f"pending pods: {launch['pending_pods']} ({launch['fits_existing']} fit existing nodes); "
        f"would launch {len(launch['claims'])} node(s) for ${cost['would_launch']:.4f}/h"
    )
    for claim in launch["claims"]:
        click.echo(
            f"  + {claim['instance_type']} {claim['capacity_type']} {claim['zone']} in pool {claim['pool']}: "
            f"{claim['pods']} pods, ${claim['cost_per_hour']:.4f}/h"
        )
    for item in launch["unschedulable"]:
        click.echo(f"  ! {item['pod']}: {item['reason']}")
    if report["buffers"]:
        click.echo("capacity buffers:")
    for row in report["buffers"]:
        click.echo(f"  {row['summary']}")
    disruption = report["disruption"]
    click.echo(f"disruption: {len(disruption['decisions'])} decision(s), saving ${cost['would_save']:.4f}/h")
    for text in disruption["decisions"]:
        click.echo(f"  - {text}")
    for node, reason in sorted(disruption["left_alone"].items()):
        click.echo(f"  = {node}: {reason}")
    if disruption["not_managed"]:
        click.echo(f"  not managed (never disrupted): {', '.join(disruption['not_managed'])}")


def _live_snapshot(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    api: Any,
    store: ClaimStore | None,
    live: bool,
    now: float,
    placement_groups_path: Path | None = None,
    consequence: str = REFUSED,
) -> tuple[ClusterConfig, tuple[ObjectVerdict, ...], Any, Any, Mapping[str, str]]:
    """Read the cluster once, as the functions do (see the module docstring); nothing is written. The last
    item: node class -> why its placement group was not looked up (`cli.placement_groups`)."""
    from longshore.adapters.kube.cluster import KubeCluster
    from longshore.adapters.kube.karpenter import KubeKarpenterObjects
    from longshore.adapters.memory import MemoryOfferingAvailability
    from longshore.services import buffer_pods
    from longshore.services.disruption_snapshot import take_snapshot

    objects = KubeKarpenterObjects(api)
    config, verdicts = live_config(config_paths, region, cluster_name, objects)
    claims = store if store is not None else cluster_claims(api)
    cluster = KubeCluster(api, component="longshore-cli")
    catalog = load_catalog_for(config, live)
    groups = placement_groups_port(placement_groups_path, config, live=live, consequence=consequence)
    snapshot = take_snapshot(
        cluster, claims, MemoryOfferingAvailability(), catalog, config, now, placement_groups=groups
    )
    buffers = buffer_pods.read_buffers(buffer_pods.source_of(cluster, config), config)
    return config, verdicts, snapshot, buffers, groups.failures if groups is not None else {}


def live_plan(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    kubeconfig: Path | None,
    kube_context: str | None,
    server: str | None,
    token: str | None,
    reservations_path: Path | None = None,
    placement_groups_path: Path | None = None,
) -> Any:
    """`longshore plan` without `--pods`: the plan for the pods pending now in a live cluster (read-only),
    with the capacity reservations of `reservations_path` (`cli.reservations`) and the placement groups of
    `placement_groups_path` (`cli.placement_groups`)."""
    from longshore.cli.reservations import read_reservations

    api = kube_api_client(kubeconfig, kube_context, server, token)
    now = time.time()
    config, _, snapshot, _, _ = _live_snapshot(
        config_paths, region, cluster_name, api, None, False, now, placement_groups_path, PLANNED_OPEN
    )
    reserved = read_reservations(reservations_path, config, snapshot.input.catalog, now)
    return _solve_pending(config, snapshot, reserved, snapshot.input.placement_groups)


@click.command(name="status")
@config_options
@cluster_options
@store_options
@click.option(
    "--live",
    is_flag=True,
    help="Price from AWS and look the placement groups up in EC2 (default credentials) instead of the "
    "shipped table.",
)
@placement_groups_option
@click.option("--now", "now_epoch", type=float, help="Evaluate at this epoch time (default: now).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def command(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    kubeconfig: Path | None,
    kube_context: str | None,
    server: str | None,
    token: str | None,
    table: str | None,
    claims_file: Path | None,
    live: bool,
    placement_groups_path: Path | None,
    now_epoch: float | None,
    as_json: bool,
) -> None:
    """Show what Longshore would launch, disrupt and save in a live cluster (read-only)."""
    api = kube_api_client(kubeconfig, kube_context, server, token)
    store = claim_store(table, claims_file, region, api)
    now = now_epoch if now_epoch is not None else time.time()
    config, verdicts, snapshot, buffers, failures = _live_snapshot(
        config_paths, region, cluster_name, api, store, live, now, placement_groups_path
    )
    report = build_report(config, verdicts, snapshot, buffers, failures)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print(report)
