"""`preferencePolicy: Ignore` (Karpenter's PREFERENCE_POLICY): preferred affinity and ScheduleAnyway spreads are
dropped before scheduling; the default `Respect` treats them as hard until relaxed (`podreqs`)."""

from __future__ import annotations

from longshore.core import labels as wk
from longshore.core.model import Settings
from longshore.core.scheduling import Plan, solve
from longshore.core.scheduling.podreqs import without_preferences
from tests.builders import expr, node_affinity, pod, pool, replicas, req, scheduling_input, zone_spread
from tests.scheduling.checker import check
from tests.scheduling.test_constraints import ZONES, small_catalog


def run(pods, policy: str, **fields) -> Plan:
    inp = scheduling_input(
        pods,
        [pool(requirements=[req(wk.CAPACITY_TYPE, "In", "on-demand"), req(wk.ZONE, "In", *ZONES)])],
        small_catalog(),
        settings=Settings(preference_policy=policy),  # type: ignore[arg-type]
        **fields,
    )
    plan = solve(inp)
    assert check(inp, plan) == []
    return plan


def _preferred_anti(app: str, key: str = wk.HOSTNAME) -> dict:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": term}]
        }
    }


def test_preferred_node_affinity_is_ignored():
    big = pod("p", affinity=node_affinity(preferred=[(50, [expr(wk.INSTANCE_TYPE, "In", "m5.4xlarge")])]))
    (respected,) = run([big], "Respect").new_claims
    assert respected.instance_types == ("m5.4xlarge",)
    (ignored,) = run([big], "Ignore").new_claims
    assert ignored.instance_type == "m5.large"  # the cheapest fit, the preference gone


def test_preferred_pod_anti_affinity_is_ignored():
    web = replicas("web", 3, cpu="500m", affinity=_preferred_anti("web"))
    assert len(run(web, "Respect").new_claims) == 3  # one a node while it can be honoured
    assert len(run(web, "Ignore").new_claims) == 1


def test_schedule_anyway_spreads_are_ignored_and_do_not_schedule_ones_kept():
    soft = replicas("web", 3, cpu="500m", spread=[zone_spread("web", hard=False)])
    assert len({c.zone for c in run(soft, "Respect").new_claims}) == 3
    assert len(run(soft, "Ignore").new_claims) == 1
    hard = replicas("web", 3, cpu="500m", spread=[zone_spread("web")])
    assert len({c.zone for c in run(hard, "Ignore").new_claims}) == 3


def test_without_preferences_keeps_required_constraints():
    p = pod(
        "p",
        affinity=node_affinity([expr(wk.ARCH, "In", "amd64")], preferred=[(1, [expr(wk.ZONE, "In", "a")])]),
        spread=[zone_spread("p"), zone_spread("p", hard=False)],
    )
    stripped = without_preferences(p)
    assert stripped.required_node_terms == p.required_node_terms and not stripped.preferred_node_terms
    assert [s.when_unsatisfiable for s in stripped.topology_spread] == ["DoNotSchedule"]
    plain = pod("q")
    assert without_preferences(plain) is plain
