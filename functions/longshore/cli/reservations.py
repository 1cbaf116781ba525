"""`--reservations FILE` of the `catalog` and `plan` commands: capacity reservations without asking AWS.

Theory of operation: the file holds a DescribeCapacityReservations answer (`adapters.aws.reservations_file`
validates it; every problem is printed with file, entry, field and value, and the command exits with status
2). The reservations each node class selects are chosen by the provisioner's own code: the
`Ec2CapacityReservations` adapter asks the file what it would ask EC2 for each `capacityReservationSelectorTerms`
term (only `active` ones, not past their end), and `services.reservation_sync.reservations_by_class` keeps the
node classes of the pools the provisioner plans. The node classes' subnets are not read offline, so every zone
of the region's catalog counts as the class's; a reservation in a zone where its type is not offered gives an
unavailable offering (`core.reservations`). Time is the wall clock (a Capacity Block is `expiring` 40 minutes
before its end).

`catalog --live` without a file reads them from AWS (`live_reservations`) through the reader the provisioner
uses (`Ec2CapacityReservations.on_subnets`: DescribeCapacityReservations per term, the node classes' zones
from DescribeSubnets); a term or zone lookup that fails is printed on stderr naming the node class and the
term, and that class's reservations are left out, as the provisioner leaves out what it cannot read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from longshore.cli.options import read_answer_file
from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig
from longshore.core.reservations import ByClass

F = TypeVar("F", bound=Callable[..., Any])


def reservations_option(func: F) -> F:
    """Add `--reservations FILE`; the command receives it as `reservations_path` (None when not given)."""
    return click.option(
        "--reservations",
        "reservations_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        metavar="FILE",
        help="Capacity reservations as DescribeCapacityReservations answers them (JSON or YAML, e.g. the "
        "output of `aws ec2 describe-capacity-reservations`), selected by the EC2NodeClasses' "
        "capacityReservationSelectorTerms.",
    )(func)


def read_reservations(path: Path | None, config: ClusterConfig, catalog: Catalog, now: float) -> ByClass:
    """The reservations each node class selects from `path` (module docstring); () without a file."""
    if path is None:
        return ()
    from longshore.adapters.aws.reservations import Ec2CapacityReservations
    from longshore.adapters.aws.reservations_file import FileReservationsEc2, load_reservation_file
    from longshore.services.reservation_sync import reservations_by_class

    entries = read_answer_file(load_reservation_file, path, "capacity reservations")
    if not any(c.capacity_reservation_selector_terms for c in config.node_classes):
        click.echo(
            f"{path}: no EC2NodeClass has capacityReservationSelectorTerms, so no reservation is used",
            err=True,
        )
    zones = frozenset(o.zone for it in catalog.instance_types for o in it.offerings)
    reader = Ec2CapacityReservations(FileReservationsEc2(entries), lambda _node_class: zones)
    return reservations_by_class(reader, config, now)


def live_reservations(ec2: Any, config: ClusterConfig, now: float) -> ByClass:
    """The reservations each node class selects, read from EC2 as the provisioner reads them (module docstring)."""
    from longshore.adapters.aws.reservations import Ec2CapacityReservations
    from longshore.services.reservation_sync import reservations_by_class

    reader = Ec2CapacityReservations.on_subnets(ec2)
    found = reservations_by_class(reader, config, now)
    for node_class in config.node_classes:
        if node_class.capacity_reservation_selector_terms and (problem := reader.failure(node_class)):
            click.echo(f"EC2NodeClass {node_class.name}: capacity reservations not read: {problem}", err=True)
    return found
