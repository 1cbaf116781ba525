"""The tail re-pack (`core/scheduling/packer_repack.py`): cheaper windows, same pods, caps, conflicts, limits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longshore.core.scheduling.packer import BinType, Item, Offer, pack
from longshore.core.scheduling.packer_model import PackedNode, PackResult
from longshore.core.scheduling.packer_repack import repack
from longshore.core.scheduling.packer_state import PackerState

GIB = 1024  # memory in MiB here


def _cost(offers: list[Offer], result: PackResult) -> float:
    return sum(offers[node.offer].price * node.replicas for node in result.nodes)


def _placed(items: list[Item], result: PackResult) -> list[int]:
    placed = [0] * len(items)
    for node in result.nodes:
        for k, count in node.contents:
            placed[k] += count * node.replicas
    return placed


def test_a_greedy_tail_of_half_full_nodes_is_re_packed_one_node_cheaper():
    # 4-vCPU and 2-vCPU pods on 15.89-vCPU nodes: at most 14 vCPU fit per node in any mix, so 154 vCPU
    # need 11 nodes; a greedy that packs five 2-vCPU pods with one 4-vCPU pod first ends with seven
    # nodes of three 4-vCPU pods (12 vCPU) and needs 12
    types = [BinType("c6a.4xlarge", (15890, 27 * GIB, 110))]
    offers = [Offer(0, "a", "on-demand", 0.612)]
    items = [Item(21, (2000, 4 * GIB, 1), 0b1), Item(28, (4000, 4 * GIB, 1), 0b1)]
    greedy = PackResult(
        (
            PackedNode(0, ((0, 5), (1, 1)), 4),
            PackedNode(0, ((0, 1), (1, 3)), 1),
            PackedNode(0, ((1, 3),), 7),
        ),
        (0, 0),
        frozenset(),
    )
    assert _placed(items, greedy) == [21, 28]
    better = repack(PackerState(items, types, offers, None), greedy)
    assert sum(node.replicas for node in better.nodes) == 11
    assert _placed(items, better) == [21, 28]
    for node in better.nodes:
        assert sum(items[k].demand[0] * count for k, count in node.contents) <= 15890
    assert sum(node.replicas for node in pack(items, types, offers).nodes) == 11


def test_a_cheaper_repack_that_would_count_more_against_a_pool_limit_is_refused():
    # two large nodes each half empty (0.5 $/h); four small ones hold the same pods for 0.4 $/h but
    # count 4 nodes against the limit instead of 2
    types = [BinType("s", (2000, 4 * GIB, 10), (1,)), BinType("l", (4000, 8 * GIB, 20), (1,))]
    offers = [Offer(0, "a", "on-demand", 0.1), Offer(1, "a", "on-demand", 0.25)]
    items = [Item(4, (1500, 1 * GIB, 1), 0b11)]
    plan = PackResult((PackedNode(1, ((0, 2),), 2),), (0,), frozenset(), (3,))
    limited = repack(PackerState(items, types, offers, [3]), plan)
    assert limited == plan
    free = repack(PackerState(items, types, offers, None), plan)
    assert _cost(offers, free) < _cost(offers, plan)
    assert _placed(items, free) == [4]


items_strategy = st.lists(
    st.tuples(
        st.integers(1, 12),  # pods
        st.integers(100, 3000),  # millicores
        st.integers(128, 6000),  # MiB
        st.integers(0, 2),  # 0: free, 1: at most one per node, 2: shares a two-per-node group
        st.booleans(),  # conflicts with the item before it
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=40, deadline=None)
@given(items_strategy)
def test_packing_with_the_repack_keeps_every_pod_cap_group_cap_and_conflict(raw):
    types = [
        BinType("s", (2000, 4096, 10)),
        BinType("m", (4000, 8192, 20)),
        BinType("l", (8000, 16384, 40)),
    ]
    offers = [
        Offer(0, "a", "od", 0.1),
        Offer(1, "a", "od", 0.17),
        Offer(2, "a", "od", 0.36),
        Offer(0, "b", "od", 0.09),
    ]
    items = []
    for k, (count, cpu, mem, kind, conflict) in enumerate(raw):
        items.append(
            Item(
                count,
                (cpu, mem, 1),
                0b1111 if k % 2 == 0 else 0b0111,
                cap=1 if kind == 1 else 0,
                groups=((0, 2),) if kind == 2 else (),
                conflicts=frozenset({k - 1}) if conflict and k > 0 else frozenset(),
            )
        )
    result = pack(items, types, offers)
    for node in result.nodes:
        room = types[offers[node.offer].type_index].room
        contents = dict(node.contents)
        for r in range(3):
            assert sum(items[k].demand[r] * count for k, count in contents.items()) <= room[r]
        assert sum(count for k, count in contents.items() if items[k].groups) <= 2
        for k, count in contents.items():
            assert items[k].offers >> node.offer & 1
            assert not items[k].cap or count <= items[k].cap
            assert not items[k].conflicts & contents.keys()
    placed = _placed(items, result)
    for k, item in enumerate(items):
        assert placed[k] + result.leftover[k] == item.count
