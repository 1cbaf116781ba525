"""NodeOverlays applied to the catalog: the prices and extended resources the scheduling simulation assumes.

Theory of operation (Karpenter `karpenter.sh/v1alpha1` NodeOverlay, kubernetes-sigs/karpenter
`pkg/apis/v1alpha1/nodeoverlay.go` and `designs/node-overlay.md`): an overlay's `requirements` are matched
against what a pool's node of an instance type would carry: the type's labels, the pool's labels and
`karpenter.sh/nodepool`, and, for prices, the offering's zone and capacity type. Matching follows
`Requirements.compatible`, as Karpenter's does, so an overlay without requirements matches everything. The
work is split once per pool (`_prepare`): the requirements on the pool's own label keys are judged against
the pool, the rest against each type's requirements, and the zone / capacity-type part against each
offering (`Offering.allowed_by`). An adjusted type keeps its computed requirements (only prices and extended
resources change), so a 1,133-type view costs a fraction of a second, once per catalog and pool.

Overlays are ordered by weight (highest first) and, at equal weight, by name in reverse alphabetical order
(`NodeOverlayList.OrderByWeight`). Each field is merged by weight: the first overlay in that order that
matches and sets the field decides it (the price of an offering; each extended resource of `capacity`
separately), and the others are ignored for that field, never added up (the design's "merge by weight").
`price` replaces the offering's price; `priceAdjustment` changes it by an amount (`+0.5`, `-0.25`) or a
percentage (`+10%`, `-15%`), never below zero. `capacity` sets extended resources on the type (its cpu,
memory, ephemeral-storage and pods are refused by validation).

`overlaid(catalog, overlays, labels)` is the catalog as one pool sees it, memoised on the catalog
(`Catalog.memo`) by overlays and pool labels, so provisioning, consolidation and the cost of the claims they
produce all use the adjusted prices and capacity; `pool_view` is that view for a pool and AMI family (the
in-flight claims' allocatable, consolidation's prices, `longshore catalog`). `price_of` prices an existing
node from such a view. `tenancy_priced(catalog, requirements)` is the view with every offering at its
dedicated-tenancy price (`core.pricing.dedicated_price`) when the requirements rule out the default tenancy
(a pool limited to `karpenter.k8s.aws/instance-tenancy: dedicated`, whose nodes all launch dedicated), and the
catalog itself otherwise; `pool_view` applies it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from longshore.core import labels as wk
from longshore.core.catalog import WINDOWS_BUILDS, Catalog, InstanceType
from longshore.core.model import NodeOverlay, NodePool, Pairs
from longshore.core.pricing import dedicated_price
from longshore.core.requirements import Requirements
from longshore.core.resources import Resources

RESTRICTED_CAPACITY = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def ordered(overlays: Iterable[NodeOverlay]) -> tuple[NodeOverlay, ...]:
    """Karpenter's precedence: weight descending, then name descending (later in the alphabet first)."""
    by_name = sorted(overlays, key=lambda o: o.name, reverse=True)
    return tuple(sorted(by_name, key=lambda o: -o.weight))


def adjust(price: float, overlay: NodeOverlay) -> float:
    """The price `overlay` gives an offering priced `price` (unchanged when it sets no price)."""
    if overlay.price is not None:
        return overlay.price
    text = overlay.price_adjustment
    if not text:
        return price
    if text.endswith("%"):
        return max(0.0, round(price * (1 + float(text[:-1]) / 100), 9))
    return max(0.0, round(price + float(text), 9))


def _sets_price(overlay: NodeOverlay) -> bool:
    return overlay.price is not None or bool(overlay.price_adjustment)


_PLACE = (wk.ZONE, wk.CAPACITY_TYPE, wk.ZONE_ID)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """An overlay's requirements split once per pool: what a type must be compatible with (the pool's own
    label keys already judged) and the zone / capacity-type / zone-id part each offering must allow."""

    overlay: NodeOverlay
    type_requirements: Requirements
    place: Requirements


def _prepare(overlays: tuple[NodeOverlay, ...], labels: Pairs) -> tuple[_Prepared, ...]:
    pool_labels = dict(labels)
    pool = Requirements.from_labels(pool_labels)
    prepared = []
    for overlay in ordered(overlays):
        requirements = Requirements.of(overlay.requirements)
        on_pool = Requirements.from_keyed(r for r in requirements if r.key in pool_labels)
        if not pool.compatible(on_pool):
            continue  # e.g. `karpenter.sh/nodepool In [other]`: not this pool's
        place = Requirements.from_keyed(r for r in requirements if r.key in _PLACE)
        prepared.append(_Prepared(overlay, requirements.without(*pool_labels), place))
    return tuple(prepared)


def _apply_type(instance_type: InstanceType, prepared: tuple[_Prepared, ...]) -> InstanceType:
    own = instance_type.requirements()
    matching = [p for p in prepared if not p.type_requirements or own.compatible(p.type_requirements)]
    if not matching:
        return instance_type
    capacity = instance_type.capacity
    done: set[str] = set()
    for found in matching:
        for name, amount in found.overlay.capacity.items:
            if name not in done:
                done.add(name)
                capacity = capacity - Resources.of({name: capacity.get(name)}) + Resources.of({name: amount})
    pricing = [p for p in matching if _sets_price(p.overlay)]
    offerings = instance_type.offerings
    if pricing:
        changed = []
        for offering in offerings:
            winner = next((p.overlay for p in pricing if offering.allowed_by(p.place)), None)
            changed.append(
                offering if winner is None else replace(offering, price=adjust(offering.price, winner))
            )
        offerings = tuple(changed)
    if capacity == instance_type.capacity and offerings == instance_type.offerings:
        return instance_type
    clone = copy.copy(instance_type)  # neither labels nor places change: keep its computed requirements
    object.__setattr__(clone, "capacity", capacity)
    object.__setattr__(clone, "offerings", offerings)
    return clone


def overlaid(catalog: Catalog, overlays: tuple[NodeOverlay, ...], labels: Pairs = ()) -> Catalog:
    """The catalog as the nodes of a pool with these `labels` (its own and `karpenter.sh/nodepool`) see it
    under `overlays` (module docstring); the catalog itself when there are none."""
    if not overlays:
        return catalog
    return catalog.memo(("overlaid", overlays, labels), lambda: _overlaid(catalog, overlays, labels))


def _overlaid(catalog: Catalog, overlays: tuple[NodeOverlay, ...], labels: Pairs) -> Catalog:
    prepared = _prepare(overlays, labels)
    if not prepared:
        return catalog
    types = tuple(_apply_type(it, prepared) for it in catalog.instance_types)
    return replace(catalog, instance_types=types)


def tenancy_priced(catalog: Catalog, requirements: Requirements) -> Catalog:
    """The catalog priced for the tenancy `requirements` leave: dedicated when they rule out `default`."""
    if requirements.allows(wk.INSTANCE_TENANCY, "default"):
        return catalog
    return catalog.memo(("dedicated",), lambda: _dedicated(catalog))


def _dedicated(catalog: Catalog) -> Catalog:
    types: list[InstanceType] = []
    for instance_type in catalog.instance_types:
        clone = copy.copy(instance_type)  # only prices change: keep its computed requirements
        offerings = tuple(replace(o, price=dedicated_price(o.price)) for o in instance_type.offerings)
        object.__setattr__(clone, "offerings", offerings)
        types.append(clone)
    return replace(catalog, instance_types=tuple(types))


def pool_view(catalog: Catalog, pool: NodePool, ami_family: str) -> Catalog:
    """The catalog as the pool's nodes of this AMI family see it: the family's view (`Catalog.for_family`)
    under the pool's overlays, matched with the labels its node template carries (as `build_template`)."""
    labels = {**dict(pool.labels), wk.NODEPOOL: pool.name}
    build = WINDOWS_BUILDS.get(ami_family)
    if build is not None:
        labels[wk.OS], labels[wk.WINDOWS_BUILD] = "windows", build
    view = overlaid(catalog.for_family(ami_family), pool.overlays, tuple(sorted(labels.items())))
    return tenancy_priced(view, Requirements.of(pool.requirements))


def price_of(catalog: Catalog, labels: Mapping[str, str]) -> float:
    """The hourly price of a node with these labels in `catalog` (an `overlaid` view): its offering's, else
    its type's cheapest; 0 when the type is unknown (a node Longshore cannot price counts nothing)."""
    found = catalog.get(labels.get(wk.INSTANCE_TYPE, ""))
    if found is None or not found.offerings:
        return 0.0
    zone, capacity_type = labels.get(wk.ZONE), labels.get(wk.CAPACITY_TYPE)
    exact = [o.price for o in found.offerings if o.zone == zone and o.capacity_type == capacity_type]
    return exact[0] if exact else min(o.price for o in found.offerings)
