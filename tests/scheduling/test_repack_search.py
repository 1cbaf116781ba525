"""The tail re-pack's search (`packer_programme`, `packer_bounds.PatternBound`, `packer_repack`'s listing and
twins): exact against brute force on small cases, a bound that never exceeds the optimum, anytime plans."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longshore.core.scheduling.packer import BinType, Item, Offer, pack
from longshore.core.scheduling.packer_bounds import PatternBound
from longshore.core.scheduling.packer_model import PackedNode, PackResult
from longshore.core.scheduling.packer_programme import OutOfWork, Work, programme
from longshore.core.scheduling.packer_repack import _maximal, _patterns, repack
from longshore.core.scheduling.packer_state import PackerState

GIB = 1024  # memory in MiB here

raw_items = st.lists(
    st.tuples(
        st.integers(1, 5),  # pods
        st.integers(300, 3000),  # millicores
        st.integers(256, 6000),  # MiB
        st.integers(0, 2),  # 0: free, 1: at most one per node, 2: shares a two-per-node group
        st.booleans(),  # conflicts with the item before it
    ),
    min_size=1,
    max_size=4,
)


def _items(raw: list[tuple[int, int, int, int, bool]]) -> list[Item]:
    return [
        Item(
            count,
            (cpu, mem, 1),
            0b11,
            cap=1 if kind == 1 else 0,
            groups=((0, 2),) if kind == 2 else (),
            conflicts=frozenset({k - 1}) if conflict and k > 0 else frozenset(),
        )
        for k, (count, cpu, mem, kind, conflict) in enumerate(raw)
    ]


def _allowed(items: list[Item], taken: tuple[int, ...], room: tuple[int, ...]) -> bool:
    group = sum(n for item, n in zip(items, taken, strict=True) if item.groups)
    present = {k for k, n in enumerate(taken) if n}
    return (
        all(
            sum(item.demand[r] * n for item, n in zip(items, taken, strict=True)) <= room[r] for r in range(3)
        )
        and all(not item.cap or n <= item.cap for item, n in zip(items, taken, strict=True))
        and group <= 2
        and not any(items[k].conflicts & present for k in present)
    )


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(raw_items, st.integers(2000, 8000), st.integers(2048, 16384))
def test_the_listing_yields_exactly_the_maximal_contents(raw, cpu, memory):
    items = _items(raw)
    room = (cpu, memory, 10)
    packer = PackerState(items, [BinType("t", room)], [Offer(0, "a", "od", 1.0)], None)
    order = list(range(len(items)))
    counts = [item.count for item in items]
    eligible = [i for i in order if all(d <= r for d, r in zip(items[i].demand, room, strict=True))]
    work = Work(10**9)
    work.window = 10**9
    listed = set(_maximal(packer, order, counts, eligible, room, work))
    expected = set()
    for taken in itertools.product(*(range(n + 1) if i in eligible else (0,) for i, n in enumerate(counts))):
        if not any(taken) or not _allowed(items, taken, room):
            continue
        bigger = (tuple(n + (j == i) for j, n in enumerate(taken)) for i in eligible if taken[i] < counts[i])
        if not any(_allowed(items, more, room) for more in bigger):
            expected.add(taken)
    assert listed == expected


def _brute(listed: list[tuple[tuple[int, ...], float]], start: tuple[int, ...]) -> float:
    @functools.cache
    def f(state: tuple[int, ...]) -> float:
        first = next((i for i, n in enumerate(state) if n), None)
        if first is None:
            return 0.0
        return min(
            (
                price + f(tuple(max(0, n - p) for n, p in zip(state, pattern, strict=True)))
                for pattern, price in listed
                if pattern[first]
            ),
            default=math.inf,
        )

    return f(start)


def _case(raw: list[tuple[int, int, int, int, bool]]):
    items = _items(raw)
    types = [
        BinType("s", (2000, 4 * GIB, 10)),
        BinType("m", (4000, 8 * GIB, 20)),
        BinType("l", (8000, 16 * GIB, 40)),
    ]
    offers = [Offer(0, "a", "od", 0.1), Offer(1, "a", "od", 0.17), Offer(2, "a", "od", 0.36)]
    packer = PackerState(items, types, offers, None)
    order = list(range(len(items)))
    work = Work(10**9)
    work.window = 10**9
    listed = _patterns(packer, order, [item.count for item in items], math.inf, work)
    assert listed is not None
    return packer, order, listed, tuple(item.count for item in items)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(raw_items)
def test_the_pattern_lp_never_exceeds_the_optimum_and_its_duals_price_no_pattern_above_its_price(raw):
    _, _, listed, start = _case(raw)
    columns: list[list[float]] = []
    bound = PatternBound(listed, lambda units: None, columns)
    for state in itertools.product(*(range(n + 1) for n in start)):
        value, duals = bound.solve(state)
        assert value <= _brute(listed, state) + 1e-9
        for pattern, price in listed:
            assert sum(y * n for y, n in zip(duals, pattern, strict=True)) <= price + 1e-9
    assert columns  # the dual solutions are kept as bound columns


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(raw_items)
def test_the_programme_finds_the_optimum_with_enough_work(raw):
    packer, order, listed, start = _case(raw)
    optimum = _brute(listed, start)
    work = Work(10**9)
    work.window = 10**9
    planned = programme(packer, order, listed, start, math.inf, work)
    assert planned is not None
    placed = [0] * len(start)
    cost = 0.0
    for contents in planned:
        for k, n in contents:
            placed[k] += n
        cost += min(price for pattern, price in listed if all(pattern[k] >= n for k, n in contents))
    assert placed == list(start)
    assert cost == pytest.approx(optimum)
    # nothing is returned unless it is below the ceiling
    work = Work(10**9)
    work.window = 10**9
    assert programme(packer, order, listed, start, optimum, work) is None


def test_out_of_work_the_best_plan_found_is_still_returned():
    packer, order, listed, start = _case(
        [(5, 2000, 1000, 0, False), (5, 1500, 3000, 0, False), (3, 700, 700, 1, False)]
    )
    work = Work(1)  # the dive alone overspends: nothing found, so the window is given up
    work.open_window()
    with pytest.raises(OutOfWork):
        programme(packer, order, listed, start, math.inf, work)
    dive_only = Work(10**9)
    dive_only.window = sum(len([p for p in listed if p[0][i]]) for i in range(len(start))) * 4
    planned = programme(packer, order, listed, start, math.inf, dive_only)
    assert planned is not None
    assert [sum(dict(c).get(k, 0) for c in planned) for k in range(len(start))] == list(start)


def test_interchangeable_items_are_searched_as_one_and_split_back():
    # the half-full tail of test_repack's first case, with the 2-vCPU pods in two interchangeable classes
    types = [BinType("c6a.4xlarge", (15890, 27 * GIB, 110))]
    offers = [Offer(0, "a", "on-demand", 0.612)]
    items = [
        Item(10, (2000, 4 * GIB, 1), 0b1),
        Item(11, (2000, 4 * GIB, 1), 0b1),
        Item(28, (4000, 4 * GIB, 1), 0b1),
    ]
    greedy = PackResult(
        (
            PackedNode(0, ((0, 5), (2, 1)), 2),
            PackedNode(0, ((1, 5), (2, 1)), 2),
            PackedNode(0, ((1, 1), (2, 3)), 1),
            PackedNode(0, ((2, 3),), 7),
        ),
        (0, 0, 0),
        frozenset(),
    )
    better = repack(PackerState(items, types, offers, None), greedy)
    assert sum(node.replicas for node in better.nodes) == 11
    placed = [0, 0, 0]
    for node in better.nodes:
        assert sum(items[k].demand[0] * n for k, n in node.contents) <= 15890
        for k, n in node.contents:
            placed[k] += n * node.replicas
    assert placed == [10, 11, 28]
    assert sum(node.replicas for node in pack(items, types, offers).nodes) == 11
