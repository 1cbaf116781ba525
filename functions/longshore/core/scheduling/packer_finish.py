"""Step 0 and 5: merging interchangeable items (and splitting them back), downsizing and merging nodes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from longshore.core.scheduling.packer_model import Item, PackedNode, PackResult, allowed_together, fits
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING


def finish(packer: PackerState, nodes: list[PackedNode]) -> PackResult:
    """Re-price every node with the cheapest offer that holds it, then merge the cheapest ones."""
    nodes = _merge_nodes(packer, [_downsize(packer, node) for node in nodes])
    left = tuple(packer.limit_room) if packer.limit_room is not None else None
    return PackResult(tuple(nodes), tuple(packer.remaining), frozenset(packer.limit_blocked), left)


def _merge_nodes(packer: PackerState, nodes: list[PackedNode]) -> list[PackedNode]:
    """Merge pairs of the cheapest nodes into one node when that costs no more (ties: fewer nodes)."""
    single: list[PackedNode] = []
    kept: list[PackedNode] = []
    for node in nodes:
        if node.replicas <= TUNING.merge_expand:
            single.extend(PackedNode(node.offer, node.contents, 1) for _ in range(node.replicas))
        else:
            kept.append(node)
    if len(single) < 2:
        return nodes
    merged_any = True
    while merged_any:
        merged_any = False
        single.sort(key=lambda n: packer.offers[n.offer].price)
        window = single[: TUNING.merge_window]
        for a in range(len(window)):
            chosen = [a]
            best: tuple[list[int], PackedNode] | None = None
            for b in range(a + 1, len(window)):
                chosen.append(b)
                merged = _merged_node(packer, [window[i] for i in chosen])
                if merged is not None:
                    best = (list(chosen), merged)
                elif len(chosen) > 1 and not _could_share(packer, [window[i] for i in chosen]):
                    chosen.pop()
            if best is not None:
                drop = set(best[0])
                single = [n for i, n in enumerate(single) if i not in drop] + [best[1]]
                merged_any = True
                break
    grouped: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
    for node in single:
        key = (node.offer, node.contents)
        grouped[key] = grouped.get(key, 0) + 1
    return kept + [PackedNode(offer, contents, count) for (offer, contents), count in grouped.items()]


def _could_share(packer: PackerState, group: list[PackedNode]) -> bool:
    contents: dict[int, int] = {}
    for node in group:
        for k, count in node.contents:
            contents[k] = contents.get(k, 0) + count
    return allowed_together(packer.items, contents)


def _merged_node(packer: PackerState, group: list[PackedNode]) -> PackedNode | None:
    """One node holding everything in `group`, if some offer costs no more than the group does."""
    contents: dict[int, int] = {}
    for node in group:
        for k, count in node.contents:
            contents[k] = contents.get(k, 0) + count
    if not allowed_together(packer.items, contents) or any(packer.items[k].together for k in contents):
        return None
    mask = -1
    load = [0] * packer.dims
    for k, count in contents.items():
        mask &= packer.items[k].offers
        for r, amount in enumerate(packer.items[k].demand):
            load[r] += amount * count
    budget = sum(packer.offers[node.offer].price for node in group) + 1e-9
    freed = [0] * len(packer.limit_room or ())
    if packer.limit_room is not None:
        for node in group:
            for r, use in enumerate(packer.types[packer.offers[node.offer].type_index].limit_usage):
                freed[r] += use
    needed = 0
    for k in contents:
        needed |= 1 << packer.group_of[k]
    for cand in packer.by_price:
        if cand.price > budget:
            return None
        if cand.groups & needed != needed:
            continue
        bin_type = packer.types[cand.type_index]
        if not fits(load, bin_type.room):
            continue
        if packer.limit_room is not None:
            if any(
                use > free + room
                for use, free, room in zip(bin_type.limit_usage, freed, packer.limit_room, strict=True)
            ):
                continue
            for r, (use, free) in enumerate(zip(bin_type.limit_usage, freed, strict=True)):
                packer.limit_room[r] += free - use
        index = cand.offer
        return PackedNode(index, tuple(sorted(contents.items())), 1)
    return None


def _downsize(packer: PackerState, node: PackedNode) -> PackedNode:
    """The cheapest offer every item of the node accepts that still holds it (ties: the larger type)."""
    load = [0] * packer.dims
    needed = 0
    for k, count in node.contents:
        needed |= 1 << packer.group_of[k]
        for r, amount in enumerate(packer.items[k].demand):
            load[r] += amount * count
    current = packer.offers[node.offer]
    usage = packer.types[current.type_index].limit_usage
    for cand in packer.by_price:
        if cand.price > current.price + 1e-12:
            break
        if cand.groups & needed != needed:
            continue
        bin_type = packer.types[cand.type_index]
        if fits(load, bin_type.room) and all(
            a <= b for a, b in zip(bin_type.limit_usage, usage, strict=True)
        ):
            if cand.price < current.price - 1e-12 or cand.offer != node.offer:
                return PackedNode(cand.offer, node.contents, node.replicas)
            return node
    return node


def merge_identical(items: Sequence[Item]) -> tuple[list[Item], list[list[int]]]:
    """Items that are interchangeable for packing (same requests, offers and shared caps, no per-item cap
    or conflict) become one item: pod classes that differ only in labels nobody selects pack as one."""
    referenced = {j for item in items for j in item.conflicts}
    merged: list[Item] = []
    members: list[list[int]] = []
    slot: dict[tuple[object, ...], int] = {}
    index_of: list[int] = []
    for k, item in enumerate(items):
        key: tuple[object, ...] | None = None
        if not item.cap and not item.conflicts and not item.together and k not in referenced:
            key = (item.demand, item.offers, item.groups)
        position = slot.get(key) if key is not None else None
        if position is None:
            position = len(merged)
            merged.append(item)
            members.append([k])
            if key is not None:
                slot[key] = position
        else:
            merged[position] = replace(merged[position], count=merged[position].count + item.count)
            members[position].append(k)
        index_of.append(position)
    if (
        len(merged) > len(items) * TUNING.merge_worth
    ):  # merging barely shrinks the work: keep the classes apart
        return list(items), [[k] for k in range(len(items))]
    merged = [
        replace(item, conflicts=frozenset(index_of[j] for j in item.conflicts)) if item.conflicts else item
        for item in merged
    ]
    return merged, members


def split_back(result: PackResult, items: Sequence[Item], members: list[list[int]]) -> PackResult:
    """Map a result over merged items back to the original items (members are used in order)."""
    if all(len(group) == 1 for group in members) and len(members) == len(items):
        return result
    queues: list[list[list[int]]] = [[[k, items[k].count] for k in group] for group in members]
    nodes: list[PackedNode] = []
    for node in result.nodes:
        replicas = node.replicas
        while replicas > 0:
            run = replicas
            for m, count in node.contents:
                head = queues[m][0] if queues[m] else None
                run = min(run, head[1] // count if head is not None else 0)
            if run > 0:
                contents = []
                for m, count in node.contents:
                    head = queues[m][0]
                    contents.append((head[0], count))
                    head[1] -= count * run
                    if head[1] == 0:
                        queues[m].pop(0)
                nodes.append(PackedNode(node.offer, tuple(sorted(contents)), run))
                replicas -= run
                continue
            taken: dict[int, int] = {}
            for m, count in node.contents:
                need = count
                while need > 0 and queues[m]:
                    head = queues[m][0]
                    take = min(need, head[1])
                    taken[head[0]] = taken.get(head[0], 0) + take
                    head[1] -= take
                    need -= take
                    if head[1] == 0:
                        queues[m].pop(0)
            nodes.append(PackedNode(node.offer, tuple(sorted(taken.items())), 1))
            replicas -= 1
    leftover = [0] * len(items)
    for queue in queues:
        for k, count in queue:
            leftover[k] = count
    blocked = frozenset(k for m in result.limit_blocked for k in members[m])
    return PackResult(tuple(nodes), tuple(leftover), blocked, result.limit_room)
