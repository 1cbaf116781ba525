"""Node templates: what a claim from each pool could be, per instance type, after overhead and DaemonSets.

Theory of operation (Karpenter `NewScheduler`, kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/scheduler.go`): a pool's template requirements are
its written requirements, its labels as `In [value]` and `karpenter.sh/nodepool In [name]`, plus Karpenter's
defaults for what it leaves open (capacity type on-demand; arch amd64 for v1alpha5 provisioners). Its instance
types are the catalog's types compatible with those requirements that have an available offering the
requirements allow (unavailable offerings from the ICE cache are removed first). For every type we keep the
allocatable (`core.allocatable`, with the pool's kubelet settings and node class), the DaemonSet overhead
(only DaemonSets whose pods tolerate the pool's taints and whose required node affinity fits the template and
the type), the room left for pods, the node capacity that pool limits count, and the offerings cheapest
first. A pool's types also carry the reserved offerings of its node class's capacity reservations
(`core.reservations`), added after NodeOverlays. A pool whose node class is in a placement group requires
`karpenter.k8s.aws/placement-group-id In [id]`, and for a partition group `placement-group-partition In
[1..count]` (`core.placement_groups`: Karpenter puts them on every type of the pool, which is the same for the
scheduler). Templates come out in the order the scheduler tries them: weight descending, then name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from longshore.core import labels as wk
from longshore.core.allocatable import allocatable, fits_network_interfaces, node_capacity
from longshore.core.catalog import WINDOWS_BUILDS, Catalog, InstanceType, Offering
from longshore.core.model import NodeClass, NodePool, Origin, Settings, Taint
from longshore.core.overlays import overlaid, tenancy_priced
from longshore.core.placement_groups import ByClass as PlacementByClass
from longshore.core.placement_groups import PlacementGroup, group_of, group_requirements
from longshore.core.pods import HostPort, Pod
from longshore.core.requirements import KeyRequirement, RequirementError, Requirements
from longshore.core.reservations import ByClass, Reservation, reservations_of, with_reservations
from longshore.core.resources import EMPTY, Resources
from longshore.core.scheduling.podreqs import node_requirement_terms
from longshore.core.taints import tolerates

POD_SLOT = Resources.of({"pods": 1})


@dataclass(frozen=True, slots=True)
class TypeOption:
    instance_type: InstanceType
    allocatable: Resources  # before DaemonSets
    daemon_overhead: Resources  # requests of the DaemonSet pods that land here (with their pod slots)
    daemon_ports: tuple[HostPort, ...]
    room: Resources  # allocatable - daemon_overhead: what pending pods may use
    capacity: Resources  # what the node counts against pool limits
    offerings: tuple[Offering, ...]  # available, allowed by the pool, cheapest first

    @property
    def name(self) -> str:
        return self.instance_type.name


@dataclass(frozen=True, slots=True)
class NodeTemplate:
    pool: NodePool
    node_class: NodeClass
    requirements: Requirements
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    options: tuple[TypeOption, ...]
    problem: str | None = None  # why the pool can launch nothing (no types, bad requirements)

    @property
    def name(self) -> str:
        return self.pool.name


def _daemon_lands(daemon: Pod, template_reqs: Requirements, taints: tuple[Taint, ...]) -> Requirements | None:
    """The requirements under which a DaemonSet's pod would land on this pool's nodes, or None if never."""
    if not tolerates(daemon.tolerations, taints, ignore_prefer_no_schedule=True):
        return None
    try:
        terms = node_requirement_terms(daemon)
    except RequirementError:
        return None
    for term in terms:
        if template_reqs.admits(term):
            return term
    return None


def _defaults(pool: NodePool, requirements: Requirements) -> Requirements:
    """Karpenter's defaults for keys a pool leaves open: on-demand capacity (every dialect) and amd64
    (the v1alpha5 webhook persisted it)."""
    keyed = []
    if wk.CAPACITY_TYPE not in requirements:
        keyed.append(KeyRequirement.in_(wk.CAPACITY_TYPE, (wk.CAPACITY_TYPE_ON_DEMAND,)))
    if pool.origin.is_v1alpha5 and wk.ARCH not in requirements:
        keyed.append(KeyRequirement.in_(wk.ARCH, ("amd64",)))
    return Requirements.from_keyed(keyed)


def build_template(
    pool: NodePool,
    node_class: NodeClass,
    catalog: Catalog,
    daemonsets: tuple[Pod, ...],
    settings: Settings,
    reservations: tuple[Reservation, ...] = (),
    placement_group: PlacementGroup | None = None,
) -> NodeTemplate:
    labels = dict(pool.labels)
    labels[wk.NODEPOOL] = pool.name
    build = WINDOWS_BUILDS.get(node_class.ami_family)
    if build is not None:  # every node of a Windows class runs that build (Karpenter's computeRequirements)
        labels[wk.OS], labels[wk.WINDOWS_BUILD] = "windows", build
    try:
        requirements = Requirements.of(pool.requirements).intersect(Requirements.from_labels(labels))
        requirements = requirements.intersect(_defaults(pool, requirements))
        requirements = requirements.intersect(group_requirements(placement_group))
    except RequirementError as exc:
        return NodeTemplate(
            pool,
            node_class,
            Requirements(),
            tuple(sorted(labels.items())),
            pool.taints,
            pool.startup_taints,
            (),
            f"pool {pool.name}: {exc}",
        )
    kubelet = pool.effective_kubelet(node_class)
    landing = [
        (d, reqs) for d in daemonsets if (reqs := _daemon_lands(d, requirements, pool.taints)) is not None
    ]
    options: list[TypeOption] = []
    catalog = catalog.for_family(node_class.ami_family)  # Windows classes see their own view of each type
    catalog = overlaid(
        catalog, pool.overlays, tuple(sorted(labels.items()))
    )  # NodeOverlays (prices, capacity)
    catalog = tenancy_priced(catalog, requirements)  # a dedicated-only pool pays the dedicated price
    catalog = with_reservations(catalog, reservations)  # the node class's capacity reservations
    for instance_type, offerings in _compatible(catalog, requirements):
        if not fits_network_interfaces(instance_type, node_class):
            continue  # an efa-only interface the type has no EFA for (Karpenter drops the type)
        type_reqs = instance_type.requirements()
        overhead = EMPTY
        ports: list[HostPort] = []
        for daemon, reqs in landing:
            if type_reqs.compatible(reqs):
                overhead = overhead + daemon.requests + POD_SLOT
                ports.extend(daemon.host_ports)
        alloc = allocatable(instance_type, kubelet, node_class, settings)
        room = (alloc - overhead).clamp_non_negative()
        capacity = node_capacity(instance_type, kubelet, node_class, settings)
        options.append(TypeOption(instance_type, alloc, overhead, tuple(ports), room, capacity, offerings))
    problem = None
    if not options:
        problem = (
            f"pool {pool.name}: {catalog.explain_none_compatible(requirements, subject=f'pool {pool.name}')}"
        )
    return NodeTemplate(
        pool,
        node_class,
        requirements,
        tuple(sorted(labels.items())),
        pool.taints,
        pool.startup_taints,
        tuple(options),
        problem,
    )


def offering_judge(requirements: Requirements) -> Callable[[Offering], bool]:
    """`offering.allowed_by(requirements)`, judged once per (zone, capacity type, zone id): thousands of
    offerings share a handful of places."""
    places: dict[tuple[str, str, str | None, str | None, str | None, bool | None], bool] = {}

    def allowed(offering: Offering) -> bool:
        place = (
            offering.zone,
            offering.capacity_type,
            offering.zone_id,
            offering.reservation_id,
            offering.reservation_type,
            offering.reservation_interruptible,
        )
        verdict = places.get(place)
        if verdict is None:
            verdict = places[place] = offering.allowed_by(requirements)
        return verdict

    return allowed


def _compatible(
    catalog: Catalog, requirements: Requirements
) -> list[tuple[InstanceType, tuple[Offering, ...]]]:
    """`catalog.compatible(requirements)` with each type's `compatible_offerings`, computed faster.

    Compatibility is per key, and an allowed offering already implies the zone and capacity-type keys are
    compatible, so types are tested against the requirements without those keys and each offering's
    (zone, capacity type, zone id) is judged once, not once per offering (thousands share a handful)."""
    placeless = requirements.without(
        wk.ZONE,
        wk.CAPACITY_TYPE,
        wk.ZONE_ID,
        wk.CAPACITY_RESERVATION_ID,
        wk.CAPACITY_RESERVATION_TYPE,
        wk.CAPACITY_RESERVATION_INTERRUPTIBLE,
    )
    allowed = offering_judge(requirements)
    priced: list[tuple[float, str, InstanceType, tuple[Offering, ...]]] = []
    for instance_type in catalog:
        if not instance_type.requirements().compatible(placeless):
            continue
        offerings = tuple(
            sorted(
                (o for o in instance_type.offerings if o.available and allowed(o)),
                key=lambda o: (o.price, o.zone, o.capacity_type),
            )
        )
        if offerings:
            priced.append((offerings[0].price, instance_type.name, instance_type, offerings))
    priced.sort(key=lambda row: (row[0], row[1]))
    return [(instance_type, offerings) for _, _, instance_type, offerings in priced]


def build_templates(
    pools: tuple[NodePool, ...],
    node_classes: tuple[NodeClass, ...],
    catalog: Catalog,
    daemonsets: tuple[Pod, ...],
    settings: Settings,
    reservations: ByClass = (),
    placement_groups: PlacementByClass = (),
) -> tuple[NodeTemplate, ...]:
    classes = {node_class.name: node_class for node_class in node_classes}
    ordered = sorted(pools, key=lambda p: (-p.weight, p.name))
    templates = []
    for pool in ordered:
        node_class = classes.get(pool.node_class) or NodeClass(
            name=pool.node_class, origin=Origin("karpenter.k8s.aws/v1", "EC2NodeClass")
        )
        found = reservations_of(reservations, node_class.name)
        group = group_of(placement_groups, node_class.name)
        key = ("template", pool, node_class, daemonsets, settings, found, group)
        templates.append(
            catalog.memo(
                key,
                lambda: build_template(pool, node_class, catalog, daemonsets, settings, found, group),  # noqa: B023
            )
        )
    return tuple(templates)


def pool_requirement(pool: str) -> KeyRequirement:
    return KeyRequirement.in_(wk.NODEPOOL, (pool,))
