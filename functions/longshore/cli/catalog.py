"""`longshore catalog --config CLUSTER.yaml [--json] [--live] [--reservations FILE]`: the instance types and
offerings each pool may use.

Theory of operation: the cluster configuration is loaded (and validated) as every command does, then the
catalog for the cluster's region is built by the same code the provisioner runs (`adapters.aws.instance_types.
load_catalog`) with `--live`, against AWS with the default credentials. Without `--live` no AWS call is made:
the shapes and zone offerings are EC2's own answers shipped as package data (`longshore/data/ec2/`, see
`adapters.aws.instance_types.offline_catalog`) and prices come from the shipped table. For each pool, the pool's requirements (plus its template labels and `karpenter.sh/nodepool`) pick
the compatible types, cheapest first; each is shown with its labels, its allocatable (capacity minus kube- and
system-reserved and the eviction threshold, before DaemonSets; `core.allocatable`, using the pool's kubelet
settings and node class) and every offering the pool's zone/capacity-type requirements allow. NodeOverlays
apply as the engine applies them (`core.overlays.overlaid`, per pool): prices are the adjusted ones, types
are ordered by them, overlay capacity shows in the allocatable, and an offering an overlay priced keeps its
catalog price in `list_price` and is marked `*` in the table (the preview of an overlay's effect).
`--reservations FILE` adds the capacity reservations the node classes select from a DescribeCapacityReservations
answer (`cli.reservations`, the provisioner's selection): one `reserved` offering per reservation, added after
the overlays as the engine adds them (`core.reservations.with_reservations`), priced at on-demand / 10,000,000,
with its reservation's id, type, interruptibility and the instances it still has room for (`remaining`; 0 for a
Capacity Block within 40 minutes of its end); a pool sees them only when it allows `karpenter.sh/capacity-type:
reserved`. The table lists them per pool. With `--live` and no file, the reservations are read from AWS through
the provisioner's reader (`cli.reservations.live_reservations`); the file, when given, is used instead.

JSON schema (stable; quantities are Kubernetes quantity strings, prices USD per hour):
    {"region": str, "aws": "offline" | "live", "prices": str,
     "nodepools": {POOL: [{"name", "labels": {k: v}, "allocatable": {resource: qty}, "capacity": {resource: qty},
                           "offerings": [{"zone", "zone_id", "capacity_type", "price", "list_price",
                                          "adjusted", "available",
                                          # reserved offerings only:
                                          "reservation_id", "reservation_type", "interruptible",
                                          "remaining"}]}]},
     "reasons": {POOL: str}}   # only pools with no compatible type
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from longshore.adapters.clock import WallClock
from longshore.cli.options import config_options, load_from_options
from longshore.cli.reservations import live_reservations, read_reservations, reservations_option
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable, node_capacity
from longshore.core.catalog import Catalog, InstanceType
from longshore.core.model import ClusterConfig, NodePool
from longshore.core.overlays import pool_view
from longshore.core.requirements import KeyRequirement, RequirementError, Requirements
from longshore.core.reservations import ByClass, reservations_of, room_left, with_reservations

PRICING_REGION = "us-east-1"


def pool_requirements(pool: NodePool) -> Requirements:
    """What a pool asks of an instance type: its requirements, template labels and its own name, plus
    Karpenter's defaults for keys it leaves open (on-demand capacity; amd64 for v1alpha5 pools, which the
    v1alpha5 webhook persisted), as the scheduler's node template does."""
    written = Requirements.of(pool.requirements)
    labels = Requirements.from_labels(pool.labels)
    requirements = written.intersect(labels).add(KeyRequirement.in_(wk.NODEPOOL, (pool.name,)))
    if wk.CAPACITY_TYPE not in requirements:
        requirements = requirements.add(KeyRequirement.in_(wk.CAPACITY_TYPE, (wk.CAPACITY_TYPE_ON_DEMAND,)))
    if pool.origin.is_v1alpha5 and wk.ARCH not in requirements:
        requirements = requirements.add(KeyRequirement.in_(wk.ARCH, ("amd64",)))
    return requirements


def describe_pool(
    cluster: ClusterConfig, pool: NodePool, catalog: Catalog, reservations: ByClass = ()
) -> tuple[list[dict[str, Any]], str | None]:
    """The JSON rows for one pool (with its node class's capacity `reservations`), and a reason when there are
    none."""
    try:
        requirements = pool_requirements(pool)
    except RequirementError as exc:
        return [], f"pool {pool.name}: {exc}"
    family = cluster.node_class_of(pool).ami_family
    listed = catalog.for_family(family)  # a Windows class's own view
    catalog = pool_view(catalog, pool, family)  # with the pool's NodeOverlays, as the engine sees it
    catalog = with_reservations(catalog, reservations_of(reservations, pool.node_class))
    room = room_left(reservations)
    rows = [
        _row(it, requirements, cluster, pool, listed[it.name], room)
        for it in catalog.compatible(requirements)
    ]
    reason = None if rows else catalog.explain_none_compatible(requirements, subject=f"pool {pool.name}")
    return rows, reason


def _row(
    it: InstanceType,
    requirements: Requirements,
    cluster: ClusterConfig,
    pool: NodePool,
    listed: InstanceType,
    room: Mapping[str, int],
) -> dict[str, Any]:
    node_class = cluster.node_class_of(pool)
    list_prices = {(o.zone, o.capacity_type): o.price for o in listed.offerings}
    kubelet = pool.effective_kubelet(node_class)
    return {
        "name": it.name,
        "labels": dict(sorted(it.node_labels().items())),
        "allocatable": allocatable(it, kubelet, node_class, cluster.settings).to_quantities(),
        "capacity": node_capacity(it, kubelet, node_class, cluster.settings).to_quantities(),
        "offerings": [
            {
                "zone": o.zone,
                "zone_id": o.zone_id,
                "capacity_type": o.capacity_type,
                "price": o.price,
                "list_price": list_prices.get((o.zone, o.capacity_type), o.price),
                "adjusted": o.price != list_prices.get((o.zone, o.capacity_type), o.price),
                "available": o.available,
                **(
                    {
                        "reservation_id": o.reservation_id,
                        "reservation_type": o.reservation_type,
                        "interruptible": bool(o.reservation_interruptible),
                        "remaining": room.get(o.reservation_id, 0),
                    }
                    if o.reservation_id
                    else {}
                ),
            }
            for o in it.compatible_offerings(requirements, available_only=False)
        ],
    }


def build_report(
    cluster: ClusterConfig, catalog: Catalog, aws: str, reservations: ByClass = ()
) -> dict[str, Any]:
    nodepools: dict[str, list[dict[str, Any]]] = {}
    reasons: dict[str, str] = {}
    for pool in cluster.pools_by_weight():
        rows, reason = describe_pool(cluster, pool, catalog, reservations)
        nodepools[pool.name] = rows
        if reason is not None:
            reasons[pool.name] = reason
    return {
        "region": catalog.region,
        "aws": aws,
        "prices": catalog.price_source,
        "nodepools": nodepools,
        "reasons": reasons,
    }


def load(
    cluster: ClusterConfig, live: bool, now: float = 0.0, *, reservations: bool = True
) -> tuple[Catalog, str, ByClass]:
    """The region's catalog, from the shipped EC2 data (default) or AWS, and with `live` (and `reservations`)
    the capacity reservations the node classes select, read at `now` as the provisioner reads them."""
    from longshore.adapters.aws.instance_types import OfflineDataMissing, load_catalog, offline_catalog

    if not live:
        try:
            return offline_catalog(cluster.region), "offline", ()
        except OfflineDataMissing as missing:
            raise click.ClickException(f"{missing}; pass --live to ask AWS") from None
    import boto3  # type: ignore[import-untyped]  # imported here: `longshore --help` stays fast

    ec2 = boto3.client("ec2", region_name=cluster.region)
    pricing = boto3.client("pricing", region_name=PRICING_REGION)
    catalog = load_catalog(ec2, pricing, cluster.region, WallClock())
    return catalog, "live", live_reservations(ec2, cluster, now) if reservations else ()


def _print_table(report: dict[str, Any], limit: int) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 160, highlight=False, soft_wrap=False)
    console.print(f"region {report['region']}; prices: {report['prices']}")
    for pool, rows in report["nodepools"].items():
        if not rows:
            console.print(
                f"\n[bold]pool {escape(pool)}[/bold]: no instance type — {escape(report['reasons'][pool])}"
            )
            continue
        table = Table(title=f"pool {pool}: {len(rows)} instance types, cheapest first", title_justify="left")
        for column in ("type", "cpu", "memory", "pods", "cheapest offering", "$/h", "offerings"):
            table.add_column(
                column, justify="right" if column in ("cpu", "memory", "pods", "$/h", "offerings") else "left"
            )
        for row in rows[:limit]:
            offers = [o for o in row["offerings"] if o["available"]]
            best = offers[0] if offers else row["offerings"][0]
            alloc = row["allocatable"]
            table.add_row(
                row["name"],
                alloc.get("cpu", "0"),
                alloc.get("memory", "0"),
                alloc.get("pods", "0"),
                f"{best['zone']} {best['capacity_type']}",
                f"{best['price']:.4f}" + ("*" if best.get("adjusted") else ""),
                str(len(offers)),
            )
        notes = []
        if any(o.get("adjusted") for row in rows[:limit] for o in row["offerings"]):
            notes.append("* priced by a NodeOverlay (list price in --json)")
        if len(rows) > limit:
            notes.append(f"{len(rows) - limit} more (use --limit or --json)")
        if notes:
            table.caption = "; ".join(notes)
        console.print(table)
        _print_reserved(console, pool, rows)


def _print_reserved(console: Any, pool: str, rows: list[dict[str, Any]]) -> None:
    """The pool's reserved offerings, one row per reservation (whatever `--limit` left out)."""
    from rich.table import Table

    reserved = [(row["name"], o) for row in rows for o in row["offerings"] if o.get("reservation_id")]
    if not reserved:
        return
    table = Table(title=f"pool {pool}: {len(reserved)} capacity reservation(s)", title_justify="left")
    for column in ("reservation", "type", "instance type", "zone", "$/h", "remaining", "available"):
        table.add_column(column, justify="right" if column in ("$/h", "remaining") else "left")
    for name, o in reserved:
        kind = o["reservation_type"] + (" (interruptible)" if o["interruptible"] else "")
        table.add_row(
            o["reservation_id"],
            kind,
            name,
            o["zone"],
            f"{o['price']:.10f}",
            str(o["remaining"]),
            "yes" if o["available"] else "no",
        )
    console.print(table)


@click.command("catalog")
@config_options
@click.option("--json", "as_json", is_flag=True, help="Print the documented JSON schema instead of tables.")
@click.option(
    "--live",
    is_flag=True,
    help="Ask AWS (default credentials) instead of using the shipped EC2 data, and read the capacity "
    "reservations the node classes select from AWS unless --reservations is given.",
)
@click.option("--limit", default=15, show_default=True, help="Rows per pool in the table output.")
@reservations_option
def command(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    as_json: bool,
    live: bool,
    limit: int,
    reservations_path: Path | None,
) -> None:
    """Show, per pool, the compatible instance types, their allocatable and the offerings the pool allows."""
    cluster = load_from_options(config_paths, region, cluster_name)
    if not live:
        click.echo(
            f"EC2 data shipped with Longshore (no network); region {cluster.region}. Pass --live to ask AWS.",
            err=True,
        )
    now = WallClock().now()
    catalog, aws, reservations = load(cluster, live, now, reservations=reservations_path is None)
    if reservations_path is not None:  # the file instead of AWS
        reservations = read_reservations(reservations_path, cluster, catalog, now)
    report = build_report(cluster, catalog, aws, reservations)
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        _print_table(report, limit)
