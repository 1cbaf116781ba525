"""`longshore validate FILE...`: check cluster configs and Karpenter manifests, show the normalised pools.

Theory of operation: all FILEs are loaded together as one cluster (so references between files resolve, and a
pool name defined twice is an error); `--each` loads every file as its own cluster instead, which is how a
folder of unrelated examples is checked. On success the normalised pools are printed as a table (or the whole
model as JSON with `--json`) and the exit status is 0; otherwise every error is printed and the status is 1.
The table helpers here are shared with `longshore demo`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from longshore.cli.options import cluster_name_option, print_config_errors, region_option
from longshore.config import ClusterConfig, ConfigErrors, load_cluster
from longshore.config.durations import format_seconds
from longshore.config.export import to_jsonable
from longshore.core.model import Budget, NodePool, Requirement

INVALID_EXIT_CODE = 1

_SHORT_PREFIXES = (
    "karpenter.k8s.aws/",
    "karpenter.sh/",
    "node.kubernetes.io/",
    "topology.kubernetes.io/",
    "kubernetes.io/",
)


def console() -> Console:
    """A console that keeps tables readable when the output is not a terminal."""
    return Console(width=None if sys.stdout.isatty() else 200, highlight=False, soft_wrap=False)


def requirement_text(requirement: Requirement) -> str:
    key = requirement.key
    for prefix in _SHORT_PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix) :]
            break
    values = ",".join(requirement.values)
    text = f"{key} {requirement.operator} {values}".rstrip()
    if requirement.min_values is not None:
        text += f" (min {requirement.min_values})"
    return text


def consolidation_text(pool: NodePool) -> str:
    after = pool.disruption.consolidate_after_seconds
    if after is None:
        return "off (Never)"
    return f"{pool.disruption.consolidation_policy} after {format_seconds(after)}"


def expiry_text(pool: NodePool) -> str:
    if pool.expiry.after_seconds is None:
        return "Never"
    return (
        f"{format_seconds(pool.expiry.after_seconds)} ({'forceful' if pool.expiry.forceful else 'graceful'})"
    )


def budget_text(budget: Budget) -> str:
    text = budget.nodes
    if budget.schedule:
        text += f" at '{budget.schedule}' for {format_seconds(budget.duration_seconds)}"
    if budget.reasons:
        text += f" [{', '.join(budget.reasons)}]"
    return text


def pools_table(entries: Sequence[tuple[str | None, ClusterConfig]], title: str = "Node pools") -> Table:
    """One row per pool; a `file` column appears when entries are labelled with their source."""
    with_source = any(source for source, _ in entries)
    table = Table(title=title, show_lines=True, title_justify="left")
    if with_source:
        table.add_column("file", overflow="fold")
    for name in (
        "pool",
        "dialect",
        "weight",
        "requirements",
        "consolidation",
        "expiry",
        "budgets",
        "node class",
        "AMI",
    ):
        table.add_column(name, overflow="fold")
    for source, config in entries:
        for pool in config.pools_by_weight():
            node_class = config.node_class_of(pool)
            amis = ", ".join(
                t.alias or t.id or t.name or t.ssm_parameter or "tags" for t in node_class.ami_selector_terms
            )
            row = [
                pool.name,
                pool.origin.dialect,
                str(pool.weight) if pool.weight else "-",
                "\n".join(requirement_text(r) for r in pool.requirements) or "-",
                consolidation_text(pool),
                expiry_text(pool),
                "\n".join(budget_text(b) for b in pool.disruption.budgets),
                node_class.name,
                f"{node_class.ami_family} ({amis})" if amis else node_class.ami_family,
            ]
            table.add_row(*([source or ""] if with_source else []), *row)
    return table


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@region_option
@cluster_name_option
@click.option(
    "--json", "as_json", is_flag=True, help="Print the normalised model as JSON instead of a table."
)
@click.option("--each", is_flag=True, help="Validate every file on its own, as separate clusters.")
def command(files: tuple[Path, ...], region: str, cluster_name: str, as_json: bool, each: bool) -> None:
    """Validate cluster configs and Karpenter manifests (v1alpha5 Provisioner/AWSNodeTemplate,
    v1beta1/v1 NodePool/EC2NodeClass) and show the normalised pools."""
    groups: list[tuple[str | None, list[Path]]] = (
        [(file.name, [file]) for file in files] if each else [(None, list(files))]
    )
    loaded: list[tuple[str | None, ClusterConfig]] = []
    failed = 0
    for label, paths in groups:
        try:
            loaded.append((label, load_cluster(paths, region=region, cluster_name=cluster_name)))
        except ConfigErrors as errors:
            failed += 1
            print_config_errors(errors)
    if as_json:
        payload = [to_jsonable(config) for _, config in loaded]
        click.echo(json.dumps(payload if each else (payload[0] if payload else None), indent=2))
    elif loaded:
        out = console()
        out.print(pools_table(loaded))
        if not failed:
            count = sum(len(config.node_pools) for _, config in loaded)
            buffers = sum(len(config.buffers) for _, config in loaded)
            extra = f", {buffers} CapacityBuffer(s)" if buffers else ""
            out.print(f"[green]valid[/green]: {len(files)} file(s), {count} pool(s){extra}")
    if failed:
        raise click.exceptions.Exit(INVALID_EXIT_CODE)
