"""Resource shadow prices: what a unit of cpu, memory or pod slot is worth, from the fluid LP's dual.

Theory of operation: for a set of pods with total demand D (per resource) and bin types t with room C_t
and hourly price p_t, the fluid relaxation of packing is

    primal  min  sum_t p_t y_t   s.t.  sum_t C_t y_t >= D,  y >= 0
    dual    max  D . pi          s.t.  C_t . pi <= p_t for every t,  pi >= 0

The dual has one variable per resource (3 or 4) and one constraint per bin type, and `pi = 0` is feasible,
so a textbook primal simplex on the dual starts from the slack basis. We keep the tableau in Tucker form
(rows = constraints, columns = the few nonbasic variables), so a pivot costs O(types x resources) and a
solve takes a handful of pivots. `pi . d` is then the fluid cost of a pod with requests d: the packer uses
it as the pod's value, so "value packed / price" measures how close a node comes to the LP optimum, and
the LP bound of the whole batch is `D . pi`. Resources are scaled by their total demand for stability.
Pure Python, no dependencies; Bland's rule keeps it from cycling. `ResourcePricer` solves the same dual for
a fixed set of bin types again and again as the demand shrinks, each time from the previous optimal basis.
"""

from __future__ import annotations

from collections.abc import Sequence

_EPS = 1e-12


def resource_prices(
    demand: Sequence[float], capacities: Sequence[Sequence[float]], prices: Sequence[float]
) -> tuple[float, ...]:
    """Shadow price per unit of each resource (same units as `demand`); zeros when nothing is demanded.

    `capacities[t][r]` is bin type t's room for resource r and `prices[t]` its hourly price."""
    dims = len(demand)
    active = [r for r in range(dims) if demand[r] > 0]
    if not active or not capacities:
        return tuple(0.0 for _ in range(dims))
    scale = {r: demand[r] for r in active}
    # Tucker tableau: s_i = b_i - sum_j a_ij x_j ; z = z0 + sum_j c_j x_j
    rows = [[capacities[t][r] / scale[r] for r in active] for t in range(len(capacities))]  # pi_r = x_r / D_r
    rhs = [float(p) for p in prices]
    objective = [1.0 for _ in active]  # scaled demand is 1 per resource
    col_var = list(range(len(active)))  # variable ids: 0..k-1 structural, k+i slack of row i
    row_var = [len(active) + i for i in range(len(rows))]
    k = len(active)
    for _ in range(200):
        candidates = [j for j in range(k) if objective[j] > _EPS]
        if not candidates:
            break
        enter = min(candidates, key=lambda j: col_var[j])  # Bland
        best_row = _leaving_row(rows, rhs, row_var, enter)
        if best_row < 0:
            break  # unbounded: a demanded resource no bin offers; leave its price at what we have
        _pivot(rows, rhs, objective, best_row, enter)
        col_var[enter], row_var[best_row] = row_var[best_row], col_var[enter]
    values = [0.0] * k
    for i, var in enumerate(row_var):
        if var < k:
            values[var] = rhs[i]
    result = [0.0] * dims
    for position, r in enumerate(active):
        result[r] = values[position] / scale[r]
    return tuple(result)


def _leaving_row(rows: list[list[float]], rhs: list[float], row_var: list[int], enter: int) -> int:
    """The ratio test for entering column `enter`: the row that leaves (ties to the lowest variable id,
    Bland's rule), or -1 when the column is unbounded."""
    best_row = -1
    best_ratio = 0.0
    for i, row in enumerate(rows):
        a = row[enter]
        if a > _EPS:
            ratio = rhs[i] / a
            if (
                best_row < 0
                or ratio < best_ratio - _EPS
                or (abs(ratio - best_ratio) <= _EPS and row_var[i] < row_var[best_row])
            ):
                best_row, best_ratio = i, ratio
    return best_row


def _pivot(rows: list[list[float]], rhs: list[float], objective: list[float], r: int, c: int) -> None:
    pivot_row = rows[r]
    a = pivot_row[c]
    inv = 1.0 / a
    new_pivot_row = [value * inv for value in pivot_row]
    new_pivot_row[c] = inv
    rhs_r = rhs[r] * inv
    for i, row in enumerate(rows):
        if i == r:
            continue
        factor = row[c]
        if factor == 0.0:
            continue
        updated = [value - factor * p for value, p in zip(row, new_pivot_row, strict=True)]
        updated[c] = -factor * inv
        rows[i] = updated
        rhs[i] -= factor * rhs_r
    factor = objective[c]
    updated = [value - factor * p for value, p in zip(objective, new_pivot_row, strict=True)]
    updated[c] = -factor * inv
    objective[:] = updated
    rows[r] = new_pivot_row
    rhs[r] = rhs_r


class ResourcePricer:
    """`resource_prices` for one fixed set of bin types, solved again and again as the demand changes.

    The dual's constraints `C_t . pi <= p_t` do not depend on the demand; only the objective `D . pi` does.
    So the tableau is kept between solves (scaled once, by each resource's largest room) and each solve
    starts from the previous optimal basis: it stays primal feasible, only the objective row is recomputed
    for the new demand (O(rows) for the few basic structural variables), and the simplex usually needs
    no pivot or one, instead of one per resource from the slack basis. Resources nobody demands get price 0
    (still feasible, since rooms are >= 0, and optimal, since they add nothing to the objective)."""

    def __init__(self, capacities: Sequence[Sequence[float]], prices: Sequence[float]) -> None:
        self.dims = len(capacities[0]) if capacities else 0
        self.scale = [max((float(c[r]) for c in capacities), default=0.0) or 1.0 for r in range(self.dims)]
        self.rows = [[c[r] / self.scale[r] for r in range(self.dims)] for c in capacities]
        self.rhs = [float(p) for p in prices]
        self.col_var = list(range(self.dims))  # variable ids: 0..k-1 structural, k+i slack of row i
        self.row_var = [self.dims + i for i in range(len(capacities))]
        self.basic_row: dict[int, int] = {}  # structural variable -> its row, while basic

    def prices(self, demand: Sequence[float]) -> tuple[float, ...]:
        """Shadow price per unit of each resource for `demand` (same units)."""
        k = self.dims
        if not self.rows or not any(d > 0 for d in demand):
            return tuple(0.0 for _ in range(len(demand)))
        weight = [max(0.0, demand[r]) / self.scale[r] for r in range(k)]  # D . pi in the scaled variables
        rows, rhs, col_var, row_var = self.rows, self.rhs, self.col_var, self.row_var
        objective = [weight[v] if v < k else 0.0 for v in col_var]
        for var, i in self.basic_row.items():
            if weight[var]:
                w = weight[var]
                objective = [c - w * a for c, a in zip(objective, rows[i], strict=True)]
        top = max(weight)
        eps = _EPS * top
        for _ in range(200):
            candidates = [j for j in range(k) if objective[j] > eps]
            if not candidates:
                break
            enter = min(candidates, key=lambda j: col_var[j])  # Bland
            best_row = _leaving_row(rows, rhs, row_var, enter)
            if best_row < 0:
                break  # unbounded: a demanded resource no bin offers; leave its price at what we have
            _pivot(rows, rhs, objective, best_row, enter)
            leaving = row_var[best_row]
            col_var[enter], row_var[best_row] = leaving, col_var[enter]
            if leaving < k:
                self.basic_row.pop(leaving, None)
            if row_var[best_row] < k:
                self.basic_row[row_var[best_row]] = best_row
        result = [0.0] * len(demand)
        for var, i in self.basic_row.items():
            if demand[var] > 0:
                result[var] = rhs[i] / self.scale[var]
        return tuple(result)
