"""The numeric core: resource prices equal the LP dual, and packing never overfills a node."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from longshore.core.scheduling.duals import ResourcePricer, resource_prices
from longshore.core.scheduling.packer import BinType, Item, Offer, pack


@pytest.mark.parametrize("seed", range(5))
def test_resource_prices_reach_the_lp_optimum(seed):
    rng = random.Random(seed)
    capacities = [(rng.randint(1, 64), rng.randint(1, 512), rng.randint(10, 200)) for _ in range(60)]
    prices = [c[0] * rng.uniform(0.03, 0.05) + c[1] * rng.uniform(0.002, 0.006) for c in capacities]
    demand = (rng.uniform(10, 500), rng.uniform(10, 2000), rng.uniform(10, 900))
    pi = resource_prices(demand, capacities, prices)
    dual_value = sum(p * d for p, d in zip(pi, demand, strict=True))
    primal = linprog(
        prices,
        A_ub=[[-c[r] for c in capacities] for r in range(3)],
        b_ub=[-d for d in demand],
        method="highs",
    )
    assert dual_value == pytest.approx(primal.fun, rel=1e-6)
    assert all(
        sum(p * c for p, c in zip(pi, cap, strict=True)) <= price + 1e-9
        for cap, price in zip(capacities, prices, strict=True)
    )


@pytest.mark.parametrize("seed", range(5))
def test_warm_started_pricer_reaches_the_lp_optimum_for_every_demand_in_turn(seed):
    rng = random.Random(seed)
    capacities = [(rng.randint(1, 64), rng.randint(1, 512), rng.randint(10, 200)) for _ in range(60)]
    prices = [c[0] * rng.uniform(0.03, 0.05) + c[1] * rng.uniform(0.002, 0.006) for c in capacities]
    pricer = ResourcePricer(capacities, prices)
    for _ in range(12):  # each solve starts from the previous one's basis
        demand = (rng.uniform(0, 500), rng.uniform(10, 2000), rng.uniform(0, 900) * (rng.random() < 0.8))
        pi = pricer.prices(demand)
        cold = resource_prices(demand, capacities, prices)
        value = sum(p * d for p, d in zip(pi, demand, strict=True))
        assert value == pytest.approx(sum(p * d for p, d in zip(cold, demand, strict=True)), rel=1e-9)
        assert all(p >= 0 for p in pi) and all(p == 0 for p, d in zip(pi, demand, strict=True) if d == 0)
        assert all(
            sum(p * c for p, c in zip(pi, cap, strict=True)) <= price + 1e-9
            for cap, price in zip(capacities, prices, strict=True)
        )


items_strategy = st.lists(
    st.tuples(st.integers(1, 40), st.integers(50, 4000), st.integers(1, 8192), st.integers(0, 1)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(items_strategy, st.integers(0, 3))
@pytest.mark.slow
def test_no_pattern_overcommits_and_every_placed_pod_is_counted(raw, limit_nodes):
    types = [
        BinType("s", (2000, 4096, 10), (1,)),
        BinType("m", (8000, 16384, 40), (1,)),
        BinType("l", (32000, 65536, 110), (1,)),
    ]
    offers = [
        Offer(0, "a", "od", 0.1),
        Offer(1, "a", "od", 0.38),
        Offer(2, "a", "od", 1.5),
        Offer(2, "b", "od", 1.4),
    ]
    all_offers = (1 << len(offers)) - 1
    items = [
        Item(count, (cpu, mem, 1), all_offers if not zone_b else 0b1000, cap=1 if count % 3 == 0 else 0)
        for count, cpu, mem, zone_b in raw
    ]
    limit = [limit_nodes * 10] if limit_nodes else None
    result = pack(items, types, offers, limit)
    placed = [0] * len(items)
    nodes = 0
    for node in result.nodes:
        room = types[offers[node.offer].type_index].room
        load = [sum(items[k].demand[r] * c for k, c in node.contents) for r in range(3)]
        assert all(a <= b for a, b in zip(load, room, strict=True))
        for k, count in node.contents:
            assert node.offer in [i for i in range(len(offers)) if items[k].offers >> i & 1]
            if items[k].cap:
                assert count <= items[k].cap
            placed[k] += count * node.replicas
        nodes += node.replicas
    for k, item in enumerate(items):
        assert placed[k] + result.leftover[k] == item.count
    if limit is not None:
        assert nodes <= limit[0]


def test_nodes_an_anti_affine_group_forces_are_topped_up_instead_of_buying_more():
    # ten mutually anti-affine pods need ten nodes; the thirty fillers, in six small classes (fewer pods each
    # than there are nodes), fit in their free room
    types = [BinType("s", (2000, 4096, 10), (1,)), BinType("m", (8000, 16384, 40), (1,))]
    offers = [Offer(0, "a", "od", 0.1), Offer(1, "a", "od", 0.4)]
    shapes = [(500, 1024), (450, 1024), (500, 900), (400, 1000), (480, 1000), (420, 980)]
    items = [Item(10, (200, 256, 1), 0b11, groups=((0, 1),))]
    items += [Item(5, (cpu, memory, 1), 0b11) for cpu, memory in shapes]
    result = pack(items, types, offers)
    assert sum(result.leftover) == 0
    assert sum(node.replicas for node in result.nodes) == 10
    assert sum(offers[node.offer].price * node.replicas for node in result.nodes) == pytest.approx(1.0)
    for node in result.nodes:
        assert dict(node.contents).get(0) == 1  # one anti-affine pod per node


def test_interchangeable_items_pack_together_and_every_pod_comes_back_to_its_own_item():
    types = [BinType("s", (2000, 4096, 10)), BinType("l", (16000, 32768, 110))]
    offers = [Offer(0, "a", "od", 0.1), Offer(1, "a", "od", 0.8)]
    items = [Item(7, (500, 1024, 1), 0b11), Item(5, (300, 512, 1), 0b11), Item(9, (500, 1024, 1), 0b11)]
    result = pack(items, types, offers)
    placed = [0, 0, 0]
    for node in result.nodes:
        for k, count in node.contents:
            placed[k] += count * node.replicas
    assert placed == [7, 5, 9]
    assert result.leftover == (0, 0, 0)


def _cost(result, offers):
    return sum(offers[node.offer].price * node.replicas for node in result.nodes)


def _big_and_small(seed):
    """Big pods (a fifth of a node) beside small fillers, spot-like prices per size."""
    rng = random.Random(seed)
    types = []
    offers = []
    for t, size in enumerate((8, 16, 32, 48, 64)):
        for shape in (2, 4, 8):  # GiB per vCPU
            index = len(types)
            types.append(BinType(f"t{t}-{shape}", (size * 1000 - 190, size * shape * 1024 - 600, 110)))
            for zone in ("a", "b", "c"):
                price = size * (0.008 + 0.002 * shape) * rng.uniform(0.9, 1.1)
                offers.append(Offer(index, zone, "spot", price))
    everything = (1 << len(offers)) - 1
    items = [Item(rng.randint(20, 120), (8000, 32768, 1), everything)]
    for _ in range(rng.randint(3, 7)):
        cpu = rng.choice((100, 250, 500, 1000, 2000, 4000))
        items.append(Item(rng.randint(20, 300), (cpu, cpu * rng.choice((1, 2, 4, 8)), 1), everything))
    return items, types, offers


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("with_members", "without_members"),
    [
        ({"seed_first_shares": (0.95, 0.85)}, {"seed_first_shares": ()}),
        ({"integer_shares": (0.95,)}, {"integer_shares": ()}),
    ],
    ids=["seed-first", "integer-aware"],
)
def test_the_extra_members_never_make_the_plan_dearer(seed, with_members, without_members, monkeypatch):
    """The portfolio with the seed-first or the integer-aware members costs no more than without them, and
    places the same pods."""
    import dataclasses

    import longshore.core.scheduling.packer as packer_module

    items, types, offers = _big_and_small(seed)
    tuning = packer_module.TUNING
    monkeypatch.setattr(packer_module, "TUNING", dataclasses.replace(tuning, **with_members))
    with_member = pack(items, types, offers)
    monkeypatch.setattr(packer_module, "TUNING", dataclasses.replace(tuning, **without_members))
    without = pack(items, types, offers)
    assert sum(with_member.leftover) == sum(without.leftover) == 0
    assert _cost(with_member, offers) <= _cost(without, offers) + 1e-9


def test_integer_factors_price_a_pod_at_the_whole_pods_its_cheapest_node_holds():
    """Five 8-vCPU pods fit a node of 47.81 vCPU where the fluid LP counts 5.98: the pod's factor is a fifth
    of the node's price over its LP value; a pod that divides the room exactly keeps its value (1.0)."""
    from longshore.core.scheduling.packer_bins import integer_factors
    from longshore.core.scheduling.packer_state import PackerState

    types = [BinType("big", (47810, 196608, 110))]
    offers = [Offer(0, "a", "spot", 0.96)]
    items = [Item(10, (8000, 32768, 1), 1), Item(40, (1000, 2048, 1), 1), Item(3, (47810, 1024, 1), 1)]
    packer = PackerState(items, types, offers, None, 0.95)
    factors = integer_factors(packer)
    assert factors[0] == pytest.approx(0.96 / 5 / packer.values[0])
    assert factors[0] > 1.1
    assert factors[1] == pytest.approx(max(1.0, 0.96 / 47 / packer.values[1]))
    assert factors[2] == pytest.approx(1.0)
    assert all(factor >= 1.0 for factor in factors)


def test_a_node_holding_more_seed_pods_wins_within_the_slack_only_in_the_seed_first_members():
    from longshore.core.scheduling.packer_greedy import _better
    from longshore.core.scheduling.packer_model import Candidate

    cand = Candidate(0, 0, 1, 1.0)
    best = (1.0, 1.0, cand, {0: 4, 1: 10})
    assert _better(0.98, 0.98, 5, best, 0, 0.03)  # more seed pods, 2 % less value per price
    assert not _better(0.96, 0.96, 5, best, 0, 0.03)  # beyond the slack
    assert not _better(1.02, 1.02, 3, best, 0, 0.03)  # fewer seed pods must beat it by the slack
    assert _better(1.04, 1.04, 3, best, 0, 0.03)
    assert not _better(0.98, 0.98, 5, best, 0, 0.0)  # the other members: value per price only
    assert _better(1.01, 1.01, 3, best, 0, 0.0)


def _forced_mix(seed):
    """Anti-affine classes (one pod per node, shared group) and hostname-capped ones beside filler classes
    of few pods each, so fillers run out part-way through a forced round."""
    rng = random.Random(seed)
    types = [
        BinType(f"t{size}-{shape}", (size * 1000 - 100, (size * shape * 1024 - 300) * 2**20, 58))
        for size in (2, 4, 8, 16)
        for shape in (2, 4, 8)
    ]
    offers = [Offer(t, "a", "od", 0.01 * rng.uniform(0.9, 1.1) * types[t].room[0] / 1000) for t in range(12)]
    everything = (1 << len(offers)) - 1
    items = [Item(rng.randint(10, 80), (rng.choice((100, 250, 500)), 2**28, 1), everything, groups=((0, 1),))]
    items.append(Item(rng.randint(5, 40), (250, 2**29, 1), everything, cap=rng.randint(1, 3)))
    for _ in range(rng.randint(3, 9)):
        cpu = rng.choice((100, 250, 500, 1000, 1500))
        memory = rng.choice((100, 256, 512, 1024, 2048, 4096)) * 2**20
        items.append(Item(rng.randint(1, 60), (cpu, memory, 1), everything))
    return items, types, offers


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.slow
def test_forced_rounds_add_repeated_nodes_arithmetically_with_the_same_plan(seed, monkeypatch):
    """A forced round adds the nodes that would top up to the same pods without filling them one by one
    (`packer_forced._repeats`): the plan is the one node-by-node top-ups make, with fewer top-ups."""
    import longshore.core.scheduling.packer_forced as forced

    items, types, offers = _forced_mix(seed)
    calls = [0]
    top_up = forced._top_up_node

    def counted(*args, **kwargs):
        calls[0] += 1
        return top_up(*args, **kwargs)

    monkeypatch.setattr(forced, "_top_up_node", counted)
    fast = pack(items, types, offers)
    fast_calls, calls[0] = calls[0], 0
    monkeypatch.setattr(forced, "_repeats", lambda *args: 0)
    slow = pack(items, types, offers)
    assert fast == slow
    assert fast_calls < calls[0]
