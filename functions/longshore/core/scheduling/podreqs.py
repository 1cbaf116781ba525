"""A pod's node requirements and its preference-relaxation ladder, in Karpenter's order.

Theory of operation (kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/preferences.go`): a pod's node requirements are its nodeSelector ANDed
with one of its ORed required node-selector terms and, while preferences are respected, its heaviest
preferred node-affinity term. Preferred pod affinity, preferred pod anti-affinity and `ScheduleAnyway`
spreads count as hard until relaxed. When a pod cannot be placed, the scheduler relaxes one step at a time:
(1) move to the next ORed required term, (2) drop the heaviest preferred pod-affinity term, (3) drop the
heaviest preferred anti-affinity term, (4) drop the heaviest preferred node-affinity term, (5) drop one
`ScheduleAnyway` spread, (6) tolerate `PreferNoSchedule` taints (only when some pool has one).
`ladder(pod)` lists those states, strictest first; each is a `Variant`.

Under `preferencePolicy: Ignore` (Karpenter's `PREFERENCE_POLICY=Ignore`, `scheduler.go` builds strict pod
requirements and `topology.go` skips preferred terms) no preference is ever hard: `without_preferences` drops
the preferred node-affinity terms, the preferred pod affinity and anti-affinity terms and the `ScheduleAnyway`
spreads of every pending pod before scheduling (bound pods' preferred anti-affinity never repels new pods under
either policy: upstream's inverse anti-affinity tracks required terms only). The ORed required terms and the `PreferNoSchedule` step of the ladder are kept, as upstream's `Relax` does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from longshore.core.model import Requirement
from longshore.core.pods import Pod, PodAffinityTerm, PreferredNodeTerm, TopologySpread
from longshore.core.requirements import Requirements


@dataclass(frozen=True, slots=True)
class Variant:
    requirements: Requirements
    affinity: tuple[PodAffinityTerm, ...]
    anti_affinity: tuple[PodAffinityTerm, ...]
    spreads: tuple[TopologySpread, ...]
    tolerate_prefer_no_schedule: bool = False
    relaxed: tuple[str, ...] = ()  # what was given up to reach this variant
    # the required part of `requirements` (no preferred node term): only it narrows a spread's domains
    required: Requirements | None = None


def _selector(pod: Pod) -> tuple[Requirement, ...]:
    return tuple(Requirement(key, "In", (value,)) for key, value in pod.node_selector)


def node_requirement_terms(pod: Pod) -> tuple[Requirements, ...]:
    """nodeSelector ANDed with each ORed required term (raises `RequirementError` on malformed values)."""
    base = _selector(pod)
    if not pod.required_node_terms:
        return (Requirements.of(base),)
    return tuple(Requirements.of((*base, *term)) for term in pod.required_node_terms)


def _variant(
    pod: Pod,
    terms: tuple[Requirements, ...],
    term: int,
    preferred_node: tuple[PreferredNodeTerm, ...],
    affinity: tuple[PodAffinityTerm, ...],
    anti: tuple[PodAffinityTerm, ...],
    anyway: tuple[TopologySpread, ...],
    tolerate: bool,
    relaxed: tuple[str, ...],
) -> Variant:
    requirements = required = terms[term]
    if preferred_node:
        requirements = requirements.intersect(Requirements.of(preferred_node[0].requirements))
    hard_spreads = tuple(s for s in pod.topology_spread if s.when_unsatisfiable == "DoNotSchedule")
    return Variant(
        requirements=requirements,
        affinity=pod.pod_affinity + affinity,
        anti_affinity=pod.pod_anti_affinity + anti,
        spreads=hard_spreads + anyway,
        tolerate_prefer_no_schedule=tolerate,
        relaxed=relaxed,
        required=required,
    )


def ladder(pod: Pod, *, prefer_no_schedule_exists: bool) -> tuple[Variant, ...]:
    """Every relaxation state of the pod, strictest first (raises `RequirementError` on malformed values)."""
    terms = node_requirement_terms(pod)
    term = 0
    preferred_node = pod.preferred_node_terms
    affinity = pod.preferred_pod_affinity
    anti = pod.preferred_pod_anti_affinity
    anyway = tuple(s for s in pod.topology_spread if s.when_unsatisfiable == "ScheduleAnyway")
    tolerate = False
    relaxed: tuple[str, ...] = ()
    variants = [_variant(pod, terms, term, preferred_node, affinity, anti, anyway, tolerate, relaxed)]
    while True:
        if term + 1 < len(terms):
            term += 1
            relaxed += (f"required node affinity term {term}",)
        elif affinity:
            affinity = affinity[1:]
            relaxed += ("a preferred pod affinity",)
        elif anti:
            anti = anti[1:]
            relaxed += ("a preferred pod anti-affinity",)
        elif preferred_node:
            preferred_node = preferred_node[1:]
            relaxed += ("a preferred node affinity",)
        elif anyway:
            anyway = anyway[1:]
            relaxed += ("a ScheduleAnyway topology spread",)
        elif prefer_no_schedule_exists and not tolerate:
            tolerate = True
            relaxed += ("PreferNoSchedule taints",)
        else:
            break
        variants.append(_variant(pod, terms, term, preferred_node, affinity, anti, anyway, tolerate, relaxed))
    return tuple(variants)


def without_preferences(pod: Pod) -> Pod:
    """The pod as `preferencePolicy: Ignore` schedules it: no preferred affinity, no `ScheduleAnyway` spread."""
    anyway = any(s.when_unsatisfiable == "ScheduleAnyway" for s in pod.topology_spread)
    if not (
        anyway or pod.preferred_node_terms or pod.preferred_pod_affinity or pod.preferred_pod_anti_affinity
    ):
        return pod
    return replace(
        pod,
        preferred_node_terms=(),
        preferred_pod_affinity=(),
        preferred_pod_anti_affinity=(),
        topology_spread=tuple(s for s in pod.topology_spread if s.when_unsatisfiable == "DoNotSchedule"),
    )
