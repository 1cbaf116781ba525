"""`--placement-groups FILE` of the `plan` command: the node classes' placement groups without asking AWS.

Theory of operation: the file holds a DescribePlacementGroups answer (`adapters.aws.placement_groups_file`
validates it; every problem is printed with file, entry, field and value, and the command exits with status
2). Each node class's `placementGroupSelector` is resolved by the provisioner's own code: the
`Ec2PlacementGroups` adapter asks the file what it would ask EC2 (the `available` group of that name or id),
and `services.placement_groups.lookup` keeps the node classes of the pools the provisioner plans, so the plan
offers the partitions as the provisioner's would (`core.placement_groups`). A selector the file does not
answer is reported on stderr naming the node class, the field and the value, and its pools are planned with
the key open, as the provisioner plans them when its lookup fails (the launch would then fail). Without the
option the key is open for every pool.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from longshore.cli.options import CONFIG_ERROR_EXIT_CODE
from longshore.core.model import ClusterConfig, NodeClass
from longshore.core.placement_groups import ByClass, PlacementGroup

F = TypeVar("F", bound=Callable[..., Any])


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
        "partition group's partitions become offerings.",
    )(func)


def read_placement_groups(path: Path | None, config: ClusterConfig) -> ByClass:
    """The placement group each node class selects from `path` (module docstring); () without a file."""
    if path is None:
        return ()
    from longshore.adapters.aws.network import Ec2PlacementGroups, SelectionError
    from longshore.adapters.aws.placement_groups_file import (
        FilePlacementGroupsEc2,
        PlacementGroupFileError,
        load_placement_group_file,
    )
    from longshore.services.placement_groups import lookup

    try:
        entries = load_placement_group_file(path)
    except PlacementGroupFileError as error:
        click.secho(f"{len(error.problems)} error(s) in the placement groups file", fg="red", err=True)
        for problem in error.problems:
            click.echo(f"  {problem}", err=True)
        raise click.exceptions.Exit(CONFIG_ERROR_EXIT_CODE) from None
    if not any(c.placement_group for c in config.node_classes):
        click.echo(
            f"{path}: no EC2NodeClass has a placementGroupSelector, so no placement group is used", err=True
        )
    reader = Ec2PlacementGroups(FilePlacementGroupsEc2(entries))

    class Reported:
        """`ports.cloud.PlacementGroups` on the file, each selector it does not answer reported."""

        def group(self, node_class: NodeClass) -> PlacementGroup | None:
            try:
                return reader.resolve(node_class)
            except SelectionError as error:
                click.echo(f"{path}: {error}; its pools are planned with the partition key open", err=True)
                return None

    return lookup(Reported(), config).found
