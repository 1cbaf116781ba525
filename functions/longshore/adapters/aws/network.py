"""Subnets, security groups and the placement group of a node class, and the subnet to use in each zone.

Theory of operation: selector terms are ORed; within a term every given field must match (tags ANDed, a tag
value `"*"` meaning "the key is present", `id`, or `name` = the `Name` tag for subnets / the group name for
security groups). Each term becomes one Describe call with EC2 filters, and the union is taken. Per zone the
subnet with the most available IPs is chosen (Karpenter `pkg/providers/subnet/subnet.go`), ties broken by id so
the choice is deterministic. An empty selection is an error naming the node class, because launching without
a subnet or a security group cannot succeed. The placement group (`placementGroupSelector`, a name or an id) is
the one `available` group DescribePlacementGroups returns for it (Karpenter `pkg/providers/placementgroup`);
none is an error naming the node class, the field and the value, as the node class is not ready in Karpenter.
`Ec2PlacementGroups` (`ports.cloud.PlacementGroups`) gives the provisioner each node class's group, looked up
once per node class and selector per container (Karpenter caches it for a day), so its plan can offer the
partitions (`core.placement_groups`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from longshore.adapters.aws.retry import ClientError, error_code
from longshore.core.model import NodeClass, SelectorTerm
from longshore.core.placement_groups import PlacementGroup

log = logging.getLogger(__name__)


class SelectionError(ValueError):
    """Selector terms that match nothing (names the node class and the field)."""


@dataclass(frozen=True, slots=True)
class Subnet:
    subnet_id: str
    zone: str
    available_ips: int
    zone_id: str = ""


def _tag_filters(term: SelectorTerm) -> list[dict[str, Any]]:
    filters: list[dict[str, Any]] = []
    for key, value in term.tags:
        if value == "*":
            filters.append({"Name": "tag-key", "Values": [key]})
        else:
            filters.append({"Name": f"tag:{key}", "Values": [value]})
    return filters


def _describe_all(call: Any, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        response = call(**kwargs)
        items.extend(response.get(key, []))
        token = response.get("NextToken")
        if not token:
            return items
        kwargs["NextToken"] = token


def select_subnets(ec2: Any, terms: Iterable[SelectorTerm], node_class: str = "") -> tuple[Subnet, ...]:
    """Every subnet matching any term, sorted by zone then id."""
    found: dict[str, Subnet] = {}
    for term in terms:
        filters = _tag_filters(term)
        if term.id:
            filters.append({"Name": "subnet-id", "Values": [term.id]})
        if term.name:
            filters.append({"Name": "tag:Name", "Values": [term.name]})
        if not filters:
            continue
        for item in _describe_all(ec2.describe_subnets, "Subnets", Filters=filters):
            found[item["SubnetId"]] = Subnet(
                subnet_id=item["SubnetId"],
                zone=item["AvailabilityZone"],
                available_ips=int(item.get("AvailableIpAddressCount", 0)),
                zone_id=item.get("AvailabilityZoneId", ""),
            )
    if not found:
        raise SelectionError(f"EC2NodeClass {node_class}: spec.subnetSelectorTerms match no subnet")
    return tuple(sorted(found.values(), key=lambda s: (s.zone, s.subnet_id)))


def node_class_zones(ec2: Any, node_class: NodeClass) -> frozenset[str]:
    """The zones `node_class` has subnets in (its `subnetSelectorTerms`; none matching is a `SelectionError`)."""
    return frozenset(s.zone for s in select_subnets(ec2, node_class.subnet_selector_terms, node_class.name))


def subnet_per_zone(subnets: Iterable[Subnet]) -> dict[str, Subnet]:
    """For each zone, the subnet with the most available IPs (ties: lowest id)."""
    best: dict[str, Subnet] = {}
    for subnet in subnets:
        current = best.get(subnet.zone)
        if current is None or (subnet.available_ips, current.subnet_id) > (
            current.available_ips,
            subnet.subnet_id,
        ):
            best[subnet.zone] = subnet
    return dict(sorted(best.items()))


def select_security_groups(ec2: Any, terms: Iterable[SelectorTerm], node_class: str = "") -> tuple[str, ...]:
    """Ids of every security group matching any term, sorted."""
    found: set[str] = set()
    for term in terms:
        filters = _tag_filters(term)
        if term.id:
            filters.append({"Name": "group-id", "Values": [term.id]})
        if term.name:
            filters.append({"Name": "group-name", "Values": [term.name]})
        if not filters:
            continue
        for item in _describe_all(ec2.describe_security_groups, "SecurityGroups", Filters=filters):
            found.add(item["GroupId"])
    if not found:
        raise SelectionError(
            f"EC2NodeClass {node_class}: spec.securityGroupSelectorTerms match no security group"
        )
    return tuple(sorted(found))


def select_placement_group(ec2: Any, term: SelectorTerm, node_class: str = "") -> PlacementGroup:
    """The available placement group the node class's `placementGroupSelector` names."""
    kwargs: dict[str, Any] = {"Filters": [{"Name": "state", "Values": ["available"]}]}
    if term.id:
        kwargs["GroupIds"] = [term.id]
    else:
        kwargs["GroupNames"] = [term.name]
    wanted = f"id {term.id}" if term.id else f"name {term.name}"
    try:
        groups = ec2.describe_placement_groups(**kwargs).get("PlacementGroups", [])
    except ClientError as error:
        if error_code(error) not in ("InvalidPlacementGroup.Unknown", "InvalidGroupId.Malformed"):
            raise
        groups = []
    if not groups:
        raise SelectionError(
            f"EC2NodeClass {node_class}: spec.placementGroupSelector {wanted} matches no available placement group"
        )
    group = groups[0]
    return PlacementGroup(
        group_id=str(group["GroupId"]),
        name=str(group.get("GroupName", "")),
        strategy=str(group.get("Strategy", "")),
        partition_count=int(group.get("PartitionCount", 0) or 0),
    )


class Ec2PlacementGroups:
    """`ports.cloud.PlacementGroups` on DescribePlacementGroups (see the module docstring)."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2
        self._found: dict[tuple[str, SelectorTerm], PlacementGroup] = {}

    def group(self, node_class: NodeClass) -> PlacementGroup | None:
        try:
            return self.resolve(node_class)
        except (ClientError, SelectionError) as error:  # the launch reports it, naming the field
            log.warning(
                "could not resolve the placement group",
                extra={"node_class": node_class.name, "error": str(error)},
            )
            return None

    def resolve(self, node_class: NodeClass) -> PlacementGroup | None:
        """The class's group (None without a selector); raises what the lookup raises (the launch's path)."""
        term = node_class.placement_group
        if term is None:
            return None
        key = (node_class.name, term)  # a changed selector is looked up again
        if key not in self._found:
            self._found[key] = select_placement_group(self._ec2, term, node_class.name)
        return self._found[key]
