"""Scheduling constraints, one behaviour per test, each plan verified by the independent checker."""

from __future__ import annotations

from collections import Counter

from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.scheduling import Plan, SchedulingInput, solve
from tests.builders import (
    anti_affinity,
    catalog,
    daemonset,
    expr,
    instance_type,
    node,
    node_affinity,
    pod,
    pod_affinity,
    pool,
    replicas,
    req,
    scheduling_input,
    zone_spread,
)
from tests.scheduling.checker import check

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def small_catalog():
    return catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES, spot_price=0.04),
        instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.192, zones=ZONES, spot_price=0.08),
        instance_type("m5.4xlarge", vcpus=16, memory_gib=64, price=0.768, zones=ZONES, spot_price=0.3),
        instance_type("c5.xlarge", vcpus=4, memory_gib=8, price=0.17, zones=ZONES, spot_price=0.07),
        instance_type("r5.xlarge", vcpus=4, memory_gib=32, price=0.252, zones=ZONES, spot_price=0.1),
        instance_type("m6g.xlarge", vcpus=4, memory_gib=16, price=0.154, zones=ZONES, arch="arm64"),
    )


def run(pods, pools=None, **fields) -> tuple[SchedulingInput, Plan]:
    inp = scheduling_input(
        pods,
        pools or [pool(requirements=[req(wk.CAPACITY_TYPE, "In", "on-demand", "spot")])],
        fields.pop("the_catalog", None) or small_catalog(),
        **fields,
    )
    plan = solve(inp)
    assert check(inp, plan) == []
    return inp, plan


def claim_of(plan: Plan, key: str):
    return next(c for c in plan.new_claims if key in c.pods)


def test_every_pod_is_placed_once_and_spot_is_used_when_allowed():
    _, plan = run(replicas("web", 20, cpu="500m", memory="1Gi"))
    assert not plan.unschedulable
    assert {c.capacity_type for c in plan.new_claims} == {"spot"}


def test_node_selector_and_ored_required_terms():
    pods = [
        pod("arm", node_selector={wk.ARCH: "arm64"}),
        pod(
            "either",
            affinity=node_affinity(
                [expr(wk.INSTANCE_TYPE, "In", "nope.large")], [expr(wk.INSTANCE_TYPE, "In", "c5.xlarge")]
            ),
        ),
    ]
    _, plan = run(pods, [pool(requirements=[req(wk.ARCH, "In", "amd64", "arm64")])])
    assert claim_of(plan, "default/arm").instance_type == "m6g.xlarge"
    assert claim_of(plan, "default/either").instance_type == "c5.xlarge"


def test_preferred_node_affinity_is_followed_then_relaxed():
    preferred = pod("pref", affinity=node_affinity(preferred=[(50, [expr(wk.ZONE, "In", "us-east-1c")])]))
    impossible = pod("relax", affinity=node_affinity(preferred=[(50, [expr(wk.ZONE, "In", "mars-1a")])]))
    _, plan = run([preferred, impossible])
    assert claim_of(plan, "default/pref").zone == "us-east-1c"
    assert "default/relax" in plan.placements()


def test_taints_need_tolerations_and_startup_taints_are_ignored():
    tainted = pool(
        "gpu",
        weight=10,
        taints=[Taint("dedicated", "NoSchedule", "gpu")],
        startup_taints=[Taint("init", "NoSchedule")],
    )
    plain = pool("general")
    tolerating = pod("t", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu"}])
    _, plan = run([tolerating, pod("p")], [tainted, plain])
    assert claim_of(plan, "default/t").nodepool == "gpu"
    assert claim_of(plan, "default/p").nodepool == "general"


def test_untolerated_taint_reason():
    _, plan = run([pod("p")], [pool("gpu", taints=[Taint("nvidia.com/gpu", "NoSchedule", "true")])])
    assert plan.reason_for("default/p") == (
        "pool gpu: does not tolerate taint nvidia.com/gpu=true:NoSchedule of pool gpu"
    )


def test_zone_spread_balances_and_respects_min_domains():
    spread = zone_spread("web")
    _, plan = run(
        replicas("web", 9, cpu="1", spread=[spread]), [pool(requirements=[req(wk.ZONE, "In", *ZONES)])]
    )
    assert sorted(Counter(claim_of(plan, f"default/web-{i}").zone for i in range(9)).values()) == [3, 3, 3]
    limited = zone_spread("api", min_domains=5)
    _, plan = run(
        replicas("api", 6, cpu="1", spread=[limited]), [pool(requirements=[req(wk.ZONE, "In", *ZONES)])]
    )
    # fewer domains than minDomains: the global minimum counts as 0, so each zone takes at most maxSkew (1)
    assert len(plan.unschedulable) == 3
    assert "minDomains 5" in plan.unschedulable[0][1]


def test_spread_domains_of_an_open_pool_requirement_come_from_the_offerings_and_types():
    # `capacity-type Exists` lists no values: the domains are what the offerings (or the types) offer
    open_ct = pool(requirements=[req(wk.CAPACITY_TYPE, "Exists")])
    spread = zone_spread("web", key=wk.CAPACITY_TYPE)
    _, plan = run(replicas("web", 4, cpu="100m", spread=[spread]), [open_ct])
    assert Counter(c.capacity_type for c in plan.new_claims for _ in c.pods) == {"spot": 2, "on-demand": 2}
    families = zone_spread("web", key=wk.INSTANCE_FAMILY)
    _, plan = run(replicas("web", 4, cpu="100m", spread=[families]), [open_ct])
    assert not plan.unschedulable


def test_a_spread_whose_selector_matches_no_pod_does_not_spread():
    # kube-scheduler: a null labelSelector matches nothing; a selector matching no pod leaves nothing to balance
    nil = {"maxSkew": 1, "topologyKey": wk.ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    _, plan = run(
        replicas("web", 3, cpu="100m", spread=[nil]), [pool(requirements=[req(wk.ZONE, "In", *ZONES)])]
    )
    assert len({c.zone for c in plan.new_claims}) == 1
    others = zone_spread("nobody", key=wk.HOSTNAME)
    _, plan = run(replicas("web", 3, cpu="100m", spread=[others]))
    assert len(plan.new_claims) == 1


def test_zone_spread_counts_existing_pods():
    existing = node("n1", zone="us-east-1a", pods=replicas("web", 2, cpu="100m", node_name="n1"))
    spread = zone_spread("web")
    pods = [pod(f"new-{i}", cpu="1", labels={"app": "web"}, spread=[spread]) for i in range(4)]
    _, plan = run(pods, [pool(requirements=[req(wk.ZONE, "In", *ZONES)])], nodes=(existing,))
    zones = Counter(claim_of(plan, f"default/new-{i}").zone for i in range(4))
    assert zones == {"us-east-1b": 2, "us-east-1c": 2}


def test_hostname_spread_and_anti_affinity_put_one_per_node():
    spread = zone_spread("a", key=wk.HOSTNAME)
    _, plan = run(
        [
            *replicas("a", 4, cpu="100m", spread=[spread]),
            *replicas("b", 3, cpu="100m", affinity=anti_affinity("b")),
        ]
    )
    for claim in plan.new_claims:
        names = [k.split("/")[1].split("-")[0] for k in claim.pods]
        assert names.count("a") <= 1 and names.count("b") <= 1


def test_inverse_anti_affinity_of_existing_pods():
    guard = pod("guard", cpu="100m", labels={"app": "guard"}, affinity=anti_affinity("web"), node_name="n1")
    existing = node("n1", pods=[guard])
    _, plan = run([pod("w", cpu="100m", labels={"app": "web"})], nodes=(existing,))
    assert plan.placements()["default/w"] != "n1"
    _, plan = run([pod("x", cpu="100m", labels={"app": "other"})], nodes=(existing,))
    assert plan.placements()["default/x"] == "n1"


def test_zone_anti_affinity_excludes_occupied_zones():
    existing = node(
        "n1", zone="us-east-1a", pods=[pod("db-0", cpu="100m", labels={"app": "db"}, node_name="n1")]
    )
    pods = replicas("db", 3, cpu="100m", affinity=anti_affinity("db", wk.ZONE))
    _, plan = run(
        [p for p in pods if p.name != "db-0"],
        [pool(requirements=[req(wk.ZONE, "In", *ZONES)])],
        nodes=(existing,),
    )
    zones = {claim_of(plan, f"default/db-{i}").zone for i in (1, 2)}
    assert zones == {"us-east-1b", "us-east-1c"}


def test_zone_anti_affinity_between_pending_workloads_holds_in_either_order():
    zonal = [pool(requirements=[req(wk.ZONE, "In", *ZONES)])]
    # the web pods come first (more cpu, Karpenter's queue order) and take every zone: the loner cannot run
    webs = [pod(f"web-{z}", cpu="2", labels={"app": "web"}, node_selector={wk.ZONE: z}) for z in ZONES]
    loner = pod("loner", cpu="100m", affinity=anti_affinity("web", wk.ZONE))
    _, plan = run([*webs, loner], zonal)  # `run` asserts the checker finds no violation
    assert set(dict(plan.unschedulable)) == {"default/loner"}
    # the anti-affine pod comes first, pinned to zone a: the web pods keep out of zone a wherever they land
    loner = pod("loner", cpu="2", node_selector={wk.ZONE: ZONES[0]}, affinity=anti_affinity("web", wk.ZONE))
    webs = replicas("web", 4, cpu="100m", labels={"app": "web"})
    _, plan = run([loner, *webs], zonal)
    assert not plan.unschedulable
    assert all(claim_of(plan, w.key).zone != ZONES[0] for w in webs)


def test_zone_pod_affinity_follows_existing_pods():
    existing = node(
        "n1",
        zone="us-east-1b",
        allocatable={"cpu": "1", "memory": "1Gi", "pods": "10"},
        pods=[pod("cache-0", cpu="900m", memory="512Mi", labels={"app": "cache"}, node_name="n1")],
    )
    pods = replicas("api", 3, cpu="1", labels={"app": "api"}, affinity=pod_affinity("cache"))
    _, plan = run(pods, [pool(requirements=[req(wk.ZONE, "In", *ZONES)])], nodes=(existing,))
    assert {claim_of(plan, f"default/api-{i}").zone for i in range(3)} == {"us-east-1b"}


def test_host_ports_never_share_a_node():
    _, plan = run(replicas("proxy", 3, cpu="100m", host_ports=[8080]))
    assert len(plan.new_claims) == 3


def test_existing_nodes_first_then_new_claims():
    existing = node("n1", allocatable={"cpu": "2", "memory": "4Gi", "pods": "10"})
    _, plan = run(replicas("w", 3, cpu="1", memory="1Gi"), nodes=(existing,))
    on_existing = plan.existing[0].pods
    assert len(on_existing) == 2 and plan.existing[0].node == "n1"
    assert sum(len(c.pods) for c in plan.new_claims) == 1


def test_in_flight_claims_take_pods_before_new_ones():
    flying = node(
        "launching",
        in_flight=True,
        initialized=False,
        allocatable={"cpu": "4", "memory": "8Gi", "pods": "20"},
    )
    _, plan = run(replicas("w", 2, cpu="1"), in_flight=(flying,))
    assert plan.existing and plan.existing[0].node == "launching" and plan.existing[0].in_flight
    assert not plan.new_claims


def test_daemonset_overhead_counts_only_where_daemons_land():
    the_catalog = catalog(instance_type("m5.large", vcpus=2, memory_gib=8, price=0.1))
    everywhere = daemonset("logger", cpu="500m")
    elsewhere = daemonset("gpu-driver", cpu="1", node_selector={"accelerator": "nvidia"})
    _inp, plan = run([pod("w", cpu="1")], the_catalog=the_catalog, daemonsets=(everywhere, elsewhere))
    (claim,) = plan.new_claims
    assert claim.daemonset_overhead.get("cpu") == 500
    assert claim.daemonset_overhead.get("pods") == 1
    _, plan = run([pod("big", cpu="1500m")], the_catalog=the_catalog, daemonsets=(everywhere,))
    assert plan.unschedulable  # 1.93 cpu allocatable - 0.5 for the logger < 1.5


def test_pool_weight_order_and_limits():
    preferred = pool(
        "small", weight=50, requirements=[req(wk.INSTANCE_TYPE, "In", "m5.large")], limits={"cpu": "4"}
    )
    fallback = pool("rest")
    _, plan = run(replicas("w", 5, cpu="1"), [fallback, preferred])
    assert Counter(c.nodepool for c in plan.new_claims)["small"] == 2  # 2 x 2 vCPU = the 4 cpu limit
    assert all(c.nodepool == "rest" for c in plan.new_claims if c.nodepool != "small")


def test_a_limit_of_zero_freezes_the_pool():
    # `limits: {cpu: "0"}` is a limit (Karpenter filters out every type above what is left: none remains)
    frozen = pool("frozen", weight=50, limits={"cpu": "0"})
    _, plan = run([pod("w", cpu="1")], [frozen])
    assert not plan.new_claims
    assert "pool frozen: cpu limit 0 reached" in plan.reason_for("default/w")
    _, plan = run([pod("w", cpu="1")], [frozen, pool("rest")])
    assert [c.nodepool for c in plan.new_claims] == ["rest"]
    # a zero limit only rules out what it counts: no GPUs allowed, cpu-only types still launch
    _, plan = run([pod("w", cpu="1")], [pool("no-gpu", limits={"nvidia.com/gpu": "0"})])
    assert [c.nodepool for c in plan.new_claims] == ["no-gpu"]


def test_fallback_types_stay_within_the_pool_limits():
    # Karpenter drops every fallback type bigger than what the limits leave (filterByRemainingResources) and
    # counts a claim's largest type against them (subtractMax); `run`'s checker verifies the worst case
    limited = pool(requirements=[req(wk.CAPACITY_TYPE, "In", "on-demand")], limits={"cpu": "6"})
    _, plan = run(replicas("w", 3, cpu="1500m", affinity=anti_affinity("w")), [limited])
    assert len(plan.new_claims) == 3 and not plan.unschedulable
    assert all(c.instance_types == ("m5.large",) for c in plan.new_claims)  # 3 x 2 vCPU: no room to fall back
    _, plan = run([pod("w", cpu="1500m")], [limited])
    (claim,) = plan.new_claims
    assert "m5.4xlarge" not in claim.instance_types and "m5.xlarge" in claim.instance_types  # 16 > 6 vCPU


def test_unavailable_offerings_are_skipped():
    the_catalog = catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.1, zones=("us-east-1a", "us-east-1b"))
    )
    _inp, plan = run(
        [pod("w")], the_catalog=the_catalog, unavailable=frozenset({("m5.large", "us-east-1a", "on-demand")})
    )
    assert plan.new_claims[0].zone == "us-east-1b"


def test_claims_list_fallback_types_cheapest_first_and_at_most_sixty():
    types = [instance_type(f"m5.s{i}", vcpus=4, memory_gib=16, price=0.1 + i / 1000) for i in range(80)]
    _, plan = run([pod("w")], the_catalog=catalog(*types))
    (claim,) = plan.new_claims
    assert len(claim.instance_types) == 60
    prices = [o.price for o in claim.offerings]
    assert prices == sorted(prices) and claim.instance_type == "m5.s0"


def test_custom_label_pool_requirement_becomes_a_node_label():
    custom = pool("teams", requirements=[req("team", "In", "a", "b")])
    _, plan = run([pod("x", node_selector={"team": "b"}), pod("y", node_selector={"team": "zzz"})], [custom])
    assert dict(claim_of(plan, "default/x").labels)["team"] == "b"
    assert "team" in plan.reason_for("default/y")


def test_pods_selecting_different_values_of_a_multi_valued_pool_label_get_their_own_claims():
    custom = pool("teams", requirements=[req("team", "In", "a", "b")])
    pods = [
        pod("x", cpu="100m", node_selector={"team": "a"}),
        pod("y", cpu="100m", node_selector={"team": "b"}),
        pod("z", cpu="100m", affinity=node_affinity([expr("team", "NotIn", "a")])),
    ]
    _, plan = run(pods, [custom])
    assert claim_of(plan, "default/x").name != claim_of(plan, "default/y").name
    assert dict(claim_of(plan, "default/x").labels)["team"] == "a"
    assert dict(claim_of(plan, "default/y").labels)["team"] == "b"
    assert claim_of(plan, "default/z").name == claim_of(plan, "default/y").name  # NotIn a leaves b


def test_json_schema_has_the_documented_fields():
    _, plan = run(replicas("w", 2))
    document = plan.to_dict()
    assert set(document) >= {"nodeclaims", "existing", "unschedulable", "cost_per_hour"}
    claim = document["nodeclaims"][0]
    assert set(claim) >= {
        "nodepool",
        "instance_type",
        "instance_types",
        "zone",
        "capacity_type",
        "price_per_hour",
        "allocatable",
        "daemonset_overhead",
        "pods",
    }
    assert isinstance(claim["allocatable"]["memory"], str)
    assert document["cost_per_hour"] == round(sum(c["price_per_hour"] for c in document["nodeclaims"]), 6)


def test_a_pool_limit_that_strands_part_of_a_zone_spread_does_not_leave_the_skew_broken():
    # found by the Hypothesis property: the split pins app1 to zones a (2) and b (1); the cpu limit (three
    # 8-vCPU nodes) strands the zone-b pod, and two app1 pods in zone a against none in zone b is skew 2
    types = catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES[:2], spot_price=0.04),
        instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.384, zones=ZONES[:2], spot_price=0.15),
    )
    pods = [
        pod(
            f"app{a}-{i}", cpu="3", memory="128Mi", labels={"app": f"app{a}"}, spread=[zone_spread(f"app{a}")]
        )
        for a, count in ((0, 4), (1, 3))
        for i in range(count)
    ]
    limited = pool(requirements=[req(wk.CAPACITY_TYPE, "In", "on-demand", "spot")], limits={"cpu": "24"})
    _, plan = run(pods, [limited], the_catalog=types)  # `run` asserts the checker finds nothing
    stranded = dict(plan.unschedulable)
    assert len(stranded) == 2
    assert any("above the skew" in reason for reason in stranded.values())
    assert sum(len(c.pods) for c in plan.new_claims) == 5


def test_readiness_taints_are_ignored_on_nodes_still_booting_only():
    # node-readiness-controller taints (`readiness.k8s.io/*`) come off once the node is ready, like startup taints
    readiness = Taint("readiness.k8s.io/NetworkReady", "NoSchedule", "pending")
    booting = node("booting", taints=[readiness], in_flight=True)
    _, plan = run([pod("p", cpu="500m")], in_flight=(booting,))
    assert plan.placements()["default/p"] == "booting" and not plan.new_claims
    ready = node("ready", taints=[readiness])
    _, plan = run([pod("p", cpu="500m")], nodes=(ready,))
    assert plan.placements()["default/p"] != "ready"
