"""Step 6's exact programme (`packer_repack`): the cheapest nodes holding a window's pods, by a bounded search.

`f(s)` is the least cost of nodes that hold the pod counts `s` (one count per window item). The first item
with pods left must be on some node, so `f(s) = min over patterns p holding it of price(p) + f(max(s - p, 0))`
(a node may hold fewer pods than its pattern: any node's content lies under some maximal pattern of its bin,
so this is exact over the window). The search:

1. A *dive* from the full window: at each state the pattern whose price plus a cheap linear bound on the rest
   is least. Its plan is the first *incumbent* (the best complete plan found so far).
2. A depth-first search with a limit (the incumbent's cost or the window's): `search(s, limit)` returns `f(s)`
   when it is below `limit`, else infinity, remembering `limit` as a lower bound of `f(s)` (exact values are
   remembered as such). At every state it expands, the *pattern LP* (`packer_bounds.PatternBound`: the LP
   relaxation over the window's own patterns, warm-started) is solved: a state whose LP value cannot beat
   the limit is cut, and its patterns are tried in order of *reduced cost* against the LP's duals at that
   state (price minus the duals' worth of what the pattern takes), so the first descent is an LP-guided
   dive and good plans come early. A child is cut when its price plus the cheap bound on the rest (the
   largest of `packer_bounds.bound_weights`' columns and the LP dual solutions kept as columns) cannot
   beat the limit.
3. *Anytime.* Every complete plan the search reaches (a leaf, or a state whose exact value is known) that
   beats the incumbent replaces it, so when the work runs out the best plan found is still returned (if
   it is cheaper than the window); a search that finishes has proven its plan optimal over the window.

Work: one unit per pattern tried, `1 + patterns // 16` per LP solve, `1 + options // 8` per ordering of a
state's options; `Work.spend` raises `OutOfWork` past the window's or the pack's budget. Deterministic: no
clock, ties broken by the patterns' order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from longshore.core.scheduling.packer_bounds import PatternBound, bound_weights
from longshore.core.scheduling.packer_state import PackerState
from longshore.core.scheduling.tuning import TUNING

Listed = list[tuple[tuple[int, ...], float]]  # (pattern over the window's items, price)
Contents = tuple[tuple[int, int], ...]  # (item index, pods) of one node


class OutOfWork(Exception):
    """The work budget of a window ran out."""


class Work:
    """The work budget: units left for the whole pack and for the current window; `spend` raises
    `OutOfWork` when either runs out."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.window = 0

    def open_window(self) -> None:
        self.window = min(self.total, TUNING.repack_window_work)

    def spend(self, units: int = 1) -> None:
        self.total -= units
        self.window -= units
        if self.window < 0:
            raise OutOfWork


def _step(state: tuple[int, ...], pattern: Sequence[int]) -> tuple[int, ...]:
    return tuple(n - p if n > p else 0 for n, p in zip(state, pattern, strict=True))


def programme(
    packer: PackerState,
    order: list[int],
    listed: Listed,
    start: tuple[int, ...],
    ceiling: float,
    work: Work,
) -> list[Contents] | None:
    """The cheapest nodes found holding `start`, as contents over item indices (`order` maps the state's
    positions to items); None unless below `ceiling`. Raises `OutOfWork` only when the budget ran out before
    any plan below `ceiling` was found."""
    weights = bound_weights(packer, order)
    pattern_lp = PatternBound(listed, work.spend, weights)

    def bound(state: tuple[int, ...]) -> float:
        best = 0.0
        for column in weights:
            need = sum(n * w for n, w in zip(state, column, strict=True) if n)
            if need > best:
                best = need
        return best

    def beaten(price: float, rest: tuple[int, ...], best: float) -> bool:
        """`price + bound(rest) >= best`, stopping at the first column that shows it (the newest, the LP's
        duals, first: they cut most)."""
        for column in reversed(weights):
            if price + sum(n * w for n, w in zip(rest, column, strict=True) if n) >= best:
                return True
        return price >= best

    def efficiency(row: tuple[tuple[int, ...], float]) -> float:
        pattern, price = row
        return -bound(pattern) / price if price > 0 else -math.inf

    # the most efficient patterns first (worth ÷ price) for the dive; the search re-orders per state
    by_first: list[Listed] = [
        sorted((p for p in listed if p[0][i] > 0), key=lambda p: (efficiency(p), p[1]))
        for i in range(len(order))
    ]
    exact: dict[tuple[int, ...], tuple[float, tuple[int, ...]]] = {}
    at_least: dict[tuple[int, ...], float] = {}
    trail: Listed = []  # the patterns (and prices) from `start` to the state being searched
    incumbent: list[tuple[int, ...]] = []  # the best plan found, as patterns from `start`
    incumbent_cost = [math.inf]

    def chain(state: tuple[int, ...]) -> list[tuple[int, ...]]:
        patterns = []
        while any(state):
            choice = exact[state][1]
            patterns.append(choice)
            state = _step(state, choice)
        return patterns

    def record(state: tuple[int, ...], rest: float) -> None:
        """The trail to `state` plus its known optimum `rest`: the new incumbent when cheaper."""
        cost = sum(price for _, price in trail) + rest
        if cost < incumbent_cost[0]:
            incumbent[:] = [pattern for pattern, _ in trail] + chain(state)
            incumbent_cost[0] = cost

    def search(state: tuple[int, ...], limit: float) -> float:
        first = next((i for i, n in enumerate(state) if n), None)
        if first is None:
            record(state, 0.0)
            return 0.0
        found = exact.get(state)
        if found is not None:
            if found[0] < limit:
                record(state, found[0])
                return found[0]
            return math.inf
        if at_least.get(state, 0.0) >= limit:
            return math.inf
        value, duals = pattern_lp.solve(state)
        at_least[state] = max(at_least.get(state, 0.0), value)
        if value >= limit:
            return math.inf
        options = by_first[first]
        work.spend(1 + len(options) // 8)
        ranked = sorted(
            options,
            key=lambda row: row[1] - sum(y * min(n, p) for y, n, p in zip(duals, state, row[0], strict=True)),
        )
        best = limit
        choice: tuple[int, ...] | None = None
        for pattern, price in ranked:
            if price >= best:
                continue
            work.spend()
            rest = _step(state, pattern)
            if beaten(price, rest, best):
                continue
            trail.append((pattern, price))
            cost = price + search(rest, best - price)
            trail.pop()
            if cost < best:
                best, choice = cost, pattern
        if choice is None:
            at_least[state] = max(at_least[state], limit)
            return math.inf
        exact[state] = (best, choice)
        return best

    # the dive: at each state the pattern whose price plus the cheap bound on the rest is least
    dive: list[tuple[int, ...]] = []
    dive_cost = 0.0
    state = start
    while any(state):
        first = next(i for i, n in enumerate(state) if n)
        options = by_first[first]
        if not options:
            return None
        work.spend(len(options))
        pattern, price = min(options, key=lambda row: (row[1] + bound(_step(state, row[0])), row[1]))
        dive.append(pattern)
        dive_cost += price
        state = _step(state, pattern)
    below = ceiling * (1 - 1e-9)
    if dive_cost < below:
        incumbent[:], incumbent_cost[0] = dive, dive_cost
    try:
        search(start, min(below, incumbent_cost[0] * (1 - 1e-9)))
    except OutOfWork:
        if not incumbent:
            raise
    if not incumbent:
        return None
    planned: list[Contents] = []
    state = start
    for pattern in incumbent:
        planned.append(
            tuple(
                sorted(
                    (order[i], min(n, p))
                    for i, (n, p) in enumerate(zip(state, pattern, strict=True))
                    if min(n, p)
                )
            )
        )
        state = _step(state, pattern)
    return planned
