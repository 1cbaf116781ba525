"""`--placement-groups FILE` of `plan`, `explain` and `status`, and `--live`'s lookup: the node classes' groups.

Theory of operation: the file holds a DescribePlacementGroups answer (`adapters.aws.placement_groups_file`
validates it; every problem is printed with file, entry, field and value, and the command exits with status
2). Each node class's `placementGroupSelector` is resolved by the functions' own code: the `Ec2PlacementGroups`
adapter asks the file what it would ask EC2 (the `available` group of that name or id), or, for `explain` and
`status --live` without a file, asks EC2 itself (default credentials; the file is used instead of AWS when
both are given), and `services.placement_groups.lookup` keeps the node classes of the pools the functions
plan, so the partitions offered are the provisioner's and the planner's (`core.placement_groups`).

A selector that is not answered (`ReportedGroups`: the adapter's `SelectionError` or EC2's `ClientError`, the
failures the adapter's own `group` turns into None) is printed on stderr naming the node class, the field and
the value, and kept (`failures`) so the command can say what it means, as each caller decides
(`services.placement_groups`): `plan` plans its pools with the key open, as the provisioner does (the launch
would then fail); `explain` and `status` hand the lookup to the planner's snapshot, so that class is
`unresolved` for the disruption planner (no replacement in its pools, none of their nodes disrupted
gracefully but empty ones) while the pending pods are planned as the provisioner plans them (key open);
`explain` names the failure in its answer (`unresolved_lines`, `launch_note`). Without a file (and without
`--live` for `explain`/`status`) nothing is looked up and the key is open for every pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from longshore.cli.options import read_answer_file
from longshore.core.model import ClusterConfig, NodeClass
from longshore.core.placement_groups import ByClass, PlacementGroup

F = TypeVar("F", bound=Callable[..., Any])

PLANNED_OPEN = "its pools are planned with the partition key open"
REFUSED = (
    "this pass the planner plans no replacement in its pools and disrupts none of their nodes gracefully "
    "(an empty node may still go); the provisioner plans them with the partition key open"
)


def placement_groups_option(func: F) -> F:
    """Add `--placement-groups FILE`; the command receives it as `placement_groups_path` (None when not given)."""
    return click.option(
        "--placement-groups",
        "placement_groups_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        metavar="FILE",
        help="Placement groups as DescribePlacementGroups answers them (JSON or YAML, e.g. the output of "
        "`aws ec2 describe-placement-groups`), selected by the EC2NodeClasses' placementGroupSelector; a "
        "partition group's partitions become offerings (used instead of EC2 with --live).",
    )(func)


class ReportedGroups:
    """`ports.cloud.PlacementGroups` on an `Ec2PlacementGroups`, each failed lookup printed and kept."""

    def __init__(self, reader: Any, where: str, consequence: str) -> None:
        self._reader, self._where, self._consequence = reader, where, consequence
        self.failures: dict[str, str] = {}  # node class -> why its group was not looked up

    def group(self, node_class: NodeClass) -> PlacementGroup | None:
        from longshore.adapters.aws.network import SelectionError
        from longshore.adapters.aws.retry import ClientError

        try:
            return self._reader.resolve(node_class)  # type: ignore[no-any-return]
        except SelectionError as error:  # names the node class, the field and the value
            problem = str(error)
        except ClientError as error:  # the adapter's `group` answers None for these too
            term = node_class.placement_group  # set: `resolve` raises only for a class with a selector
            wanted = f"id {term.id}" if term is not None and term.id else f"name {term.name if term else ''}"
            problem = f"EC2NodeClass {node_class.name}: spec.placementGroupSelector {wanted}: {error}"
        self.failures[node_class.name] = problem
        click.echo(f"{self._where}: {problem}; {self._consequence}", err=True)
        return None


def placement_groups_port(
    path: Path | None, config: ClusterConfig, *, live: bool = False, consequence: str = REFUSED
) -> ReportedGroups | None:
    """The lookup the options ask for (module docstring): the file, else EC2 with `live`, else None."""
    from longshore.adapters.aws.network import Ec2PlacementGroups

    if path is None:
        if not live:
            return None
        import boto3  # type: ignore[import-untyped]

        ec2 = boto3.client("ec2", region_name=config.region)
        return ReportedGroups(Ec2PlacementGroups(ec2), "EC2", consequence)
    from longshore.adapters.aws.placement_groups_file import FilePlacementGroupsEc2, load_placement_group_file

    entries = read_answer_file(load_placement_group_file, path, "placement groups")
    if not any(c.placement_group for c in config.node_classes):
        click.echo(
            f"{path}: no EC2NodeClass has a placementGroupSelector, so no placement group is used", err=True
        )
    return ReportedGroups(Ec2PlacementGroups(FilePlacementGroupsEc2(entries)), str(path), consequence)


def read_placement_groups(path: Path | None, config: ClusterConfig) -> ByClass:
    """The placement group each node class selects from `path` (module docstring); () without a file."""
    from longshore.services.placement_groups import lookup

    return lookup(placement_groups_port(path, config, consequence=PLANNED_OPEN), config).found


def _pools_of(config: ClusterConfig, node_class: str) -> str:
    return ", ".join(p.name for p in config.pools_by_weight() if p.node_class == node_class) or "none"


def unresolved_lines(inp: Any, failures: Mapping[str, str]) -> tuple[str, ...]:
    """One line per node class whose group was not looked up this pass (a `DisruptionInput`'s
    `placement_unresolved`): why, and what the planner does about it (`core.disruption.state`)."""
    return tuple(
        f"placement group not looked up: {failures.get(name) or f'EC2NodeClass {name}'}; no replacement "
        f"is planned in pool(s) {_pools_of(inp.config, name)} this pass and none of their nodes is "
        "disrupted gracefully (an empty node may still go)"
        for name in sorted(inp.placement_unresolved)
    )


def launch_note(inp: Any, failures: Mapping[str, str], pool_name: str) -> str | None:
    """What a new claim in `pool_name` meets when its node class's group was not looked up: the provisioner
    plans it with the partition key open and the launch fails naming the node class and the field."""
    pool = next((p for p in inp.config.node_pools if p.name == pool_name), None)
    if pool is None or pool.node_class not in inp.placement_unresolved:
        return None
    why = failures.get(pool.node_class) or f"EC2NodeClass {pool.node_class}"
    return (
        f"placement group not looked up: {why}; the provisioner plans pool {pool_name} with the partition "
        "key open and its launch fails until the group is found"
    )
