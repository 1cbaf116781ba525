"""Lower bounds for the tail re-pack (`packer_repack`): per-pod weights no node's price can fall short of.

A *weight column* gives every item of a window a weight per pod such that, for every bin and every content
it may hold, the weights of the content add up to at most the bin's price. The cost of any nodes holding a
state's pods is then at least the column's weighted sum of those pods, and the largest over several columns
is a lower bound too. The columns: per resource, the cheapest price per unit of that resource among the
bins of the pod's group (a node's price covers its room at that unit price); and the fluid LP's dual
prices (`duals.resource_prices`) over the requests extended by one dimension per per-node cap (a pod uses
1 of it, every node has the cap), the smallest over the window's groups, for the window's demand. Each dual is feasible for every type of its group at its cheapest offer there, and
a node serves some group of its pods, so its price is at least `pi . room`, at least what it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from longshore.core.scheduling.duals import ResourcePricer, resource_prices
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING


def bound_weights(packer: PackerState, order: list[int]) -> list[list[float]]:
    """Per resource, each item's least cost per pod: its request times the cheapest price per unit of that
    resource among the bins that serve its group. A node's price covers every resource's weights of what it
    holds, so the largest per-resource sum over a state's pods is a lower bound on its cost."""
    unit: dict[int, list[float]] = {}
    for k in order:
        group = packer.group_of[k]
        if group not in unit:
            bit = 1 << group
            unit[group] = [
                min(
                    (
                        c.price / packer.types[c.type_index].room[r]
                        for c in packer.candidates
                        if c.groups & bit and packer.types[c.type_index].room[r] > 0
                    ),
                    default=0.0,
                )
                for r in range(packer.dims)
            ]
    weights = [
        [packer.items[k].demand[r] * unit[packer.group_of[k]][r] for k in order] for r in range(packer.dims)
    ]
    if packer.group_rows:
        shapes = _capped_shapes(packer, order)
        total = [0.0] * len(shapes[0][0])
        for k, (shape, _) in zip(order, shapes, strict=True):
            for r, amount in enumerate(shape):
                total[r] += amount * (1 + 1e-3 * k)  # distinct from any single item's shape
        caps = shapes[0][1]
        weights.append(_fluid_weights(packer, order, shapes, total, caps))
    return weights


def _capped_shapes(packer: PackerState, order: list[int]) -> list[tuple[list[int], list[int]]]:
    """Each item's requests with one more dimension per per-node cap in the window (an item's own cap, a
    shared group's cap): the pod uses 1 of it, every node has the cap. No node can hold more, so the fluid
    LP over these dimensions still bounds every node's content, and it knows that ten pods of a
    one-per-node class need ten nodes. Returned per item as (shape, the caps of the extra dimensions)."""
    dims: dict[tuple[str, int], int] = {}
    for k in order:
        item = packer.items[k]
        if item.cap:
            dims.setdefault(("item", k), item.cap)
        for group, cap in item.groups:
            dims.setdefault(("group", group), cap)
    keys = list(dims)
    caps = [dims[key] for key in keys]
    shapes = []
    for k in order:
        item = packer.items[k]
        mine = {("item", k)} if item.cap else set()
        mine.update(("group", group) for group, _ in item.groups)
        shapes.append((list(item.demand) + [1 if key in mine else 0 for key in keys], caps))
    return shapes


def _lowest_prices(
    packer: PackerState, order: list[int], demand: list[float], caps: list[int] | None = None
) -> list[float]:
    """Per dimension, the lowest over the window's groups of the fluid LP's dual price for `demand` (with
    `caps`, the extra per-node-cap dimensions of `_capped_shapes`)."""
    extra = tuple(caps or ())
    lowest: list[float] | None = None
    for group in sorted({packer.group_of[k] for k in order}):
        rooms, prices = packer.group_rows[group]
        pi = resource_prices(demand, [tuple(room) + extra for room in rooms], prices)
        lowest = list(pi) if lowest is None else [min(a, b) for a, b in zip(lowest, pi, strict=True)]
    assert lowest is not None
    return lowest


def _fluid_weights(
    packer: PackerState,
    order: list[int],
    shapes: list[tuple[list[int], list[int]]],
    demand: list[float],
    caps: list[int],
) -> list[float]:
    """Each item's value at prices every bin of the window's groups can pay: per group, the fluid LP's dual
    for `demand` over the capped shapes (`duals.resource_prices`: `pi . room <= price` for every type of the
    group at its cheapest offer in it), the smallest per dimension over the groups. A node serves some group
    of its pods, so its price is at least `pi . room`, at least the weights of what it holds."""
    lowest = _lowest_prices(packer, order, demand, caps)
    return [(1 - 1e-9) * sum(p * d for p, d in zip(lowest, shape, strict=True)) for shape, _ in shapes]


class PatternBound:
    """The LP relaxation of the window's programme over its own patterns, solved at a state on demand.

    `min sum_p price_p x_p  s.t.  sum_p pattern_p x_p >= state, x >= 0` bounds the cost of any nodes
    holding the state's pods (a node's content lies under some listed pattern no dearer; see
    `packer_repack`). Its dual, `max y . state  s.t.  y . pattern_p <= price_p, y >= 0`, has one variable
    per item and one constraint per pattern: `duals.ResourcePricer` with the patterns as rooms, warm-started
    from the previous state's basis, so a solve is a few pivots. Every dual-feasible `y` bounds *every*
    state (`y . s`), not just the one it was solved at, so the solution is also kept as a weight column
    for the cheap bound of the programme's children (at most `TUNING.repack_lp_columns` of them, the
    oldest replaced). The simplex stops after its pivot cap with a feasible, possibly suboptimal `y`: still
    a bound. Each solve costs `1 + patterns // 2` work units (`spend`): about its pivots times its rows, against one unit a
    pattern tried (with `// 16` the search spent 90 % of a 100-pod solve in LP solves)."""

    def __init__(
        self,
        listed: Sequence[tuple[tuple[int, ...], float]],
        spend: Callable[[int], None],
        columns: list[list[float]],
    ) -> None:
        self.pricer = ResourcePricer([pattern for pattern, _ in listed], [price for _, price in listed])
        self.spend = spend
        self.cost = 1 + len(listed) // 2
        self.columns = columns
        self.fixed = len(columns)  # the columns before this bound's own (kept)
        self.next_slot = 0

    def solve(self, state: Sequence[int]) -> tuple[float, list[float]]:
        """A lower bound on the cost of the nodes holding `state` (the LP's value, within rounding, or a
        kept column's when larger) and the dual solution found at `state` (a price per item)."""
        self.spend(self.cost)
        column = [(1 - 1e-9) * max(0.0, y) for y in self.pricer.prices([float(n) for n in state])]
        value = sum(y * n for y, n in zip(column, state, strict=True))
        known = max((sum(w * n for w, n in zip(c, state, strict=True)) for c in self.columns), default=0.0)
        if value > known * (1 + 1e-6):
            if len(self.columns) - self.fixed < TUNING.repack_lp_columns:
                self.columns.append(column)
            else:
                self.columns[self.fixed + self.next_slot] = column
                self.next_slot = (self.next_slot + 1) % TUNING.repack_lp_columns
        return max(value, known), column
