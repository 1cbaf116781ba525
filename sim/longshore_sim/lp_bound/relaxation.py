"""Upper bounds on every bin's pricing problem at once (`colgen`): the LP relaxation of the bounded knapsack
`max v . a  s.t.  D a <= room_b, 0 <= a <= cap_b`, evaluated through its dual.

Theory of operation: for any mu >= 0 (one price per dimension: millicores, bytes, pod slots) and any filling a
of bin b,

    v . a = sum_k a_k (v_k - mu . d_k) + mu . (D a)  <=  sum_k cap_bk max(0, v_k - mu . d_k) + mu . room_b

since 0 <= a_k <= cap_bk and D a <= room_b. So every mu gives a valid upper bound U_b(mu) on the bin's
pricing optimum (weak duality), and the least over mu is the LP relaxation's optimum. That least is reached
at a vertex of the arrangement of the hyperplanes {mu_r = 0} and {mu . d_k = v_k}: three of them meeting in
one point. The candidates are therefore every such point with mu >= 0: for each set of dimensions held at 0
and each set of items of the complementing size, the solution of the small linear system. Their matrices
depend only on the demands, so they are inverted once; each round only multiplies by the duals. With k
classes there are about k^3/6 candidates, evaluated against every bin in one matrix product.

Validity does not depend on the candidates being exact vertices (any mu >= 0 bounds), only on the
arithmetic: the result is raised by a relative 1e-9 against rounding. This bound is at most the per-dimension
fractional knapsack bound (that is the same LP with two of the three constraints dropped).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

_ROUNDING = 1e-9  # relative margin against floating-point error
_CANDIDATE_LIMIT = 20_000  # more candidates than this: only the axis-aligned ones (the fractional bounds)


class KnapsackRelaxation:
    """The LP-relaxation bound of every bin's pricing problem for given duals (module docstring)."""

    def __init__(self, demand: Any, caps: Any, room: Any) -> None:
        import numpy as np

        self.scale = np.maximum(np.asarray(demand, dtype=float).max(axis=0), 1.0)
        self.demand = np.asarray(demand, dtype=float) / self.scale[None, :]  # classes x 3, scaled
        self.caps = np.asarray(caps, dtype=float)  # bins x classes
        self.room = np.asarray(room, dtype=float) / self.scale[None, :]  # bins x 3, scaled
        classes = len(self.demand)
        systems: list[tuple[tuple[int, ...], tuple[int, ...], Any]] = []
        for size in range(0, 4):
            free = [dims for dims in combinations(range(3), size)]
            count = sum(1 for _ in combinations(range(classes), size)) * len(free)
            if size == 3 and count > _CANDIDATE_LIMIT:
                continue
            for dims in free:
                for items in combinations(range(classes), size):
                    if not items:
                        systems.append(((), (), np.zeros((0, 0))))
                        continue
                    matrix = self.demand[np.ix_(items, dims)]
                    if abs(np.linalg.det(matrix)) < 1e-12:
                        continue
                    systems.append((dims, items, np.linalg.inv(matrix)))
        self.systems = systems
        self._group()

    def _group(self) -> None:
        """Stack the systems of each shape, so a round solves each shape with one tensor product."""
        import numpy as np

        grouped: dict[tuple[int, ...], list[tuple[tuple[int, ...], Any]]] = {}
        for dims, items, inverse in self.systems:
            grouped.setdefault(dims, []).append((items, inverse))
        self.groups = [
            (
                dims,
                np.array([items for items, _ in rows], dtype=np.int64).reshape(len(rows), len(dims)),
                np.array([inverse for _, inverse in rows]).reshape(len(rows), len(dims), len(dims)),
            )
            for dims, rows in grouped.items()
        ]

    def bounds(self, duals: Any) -> Any:
        """Per bin, an upper bound on `max duals . a` over the bin's fillings (the LP relaxation's optimum)."""
        import numpy as np

        values = np.asarray(duals, dtype=float)
        candidates = []
        for dims, items, inverse in self.groups:
            mu = np.zeros((len(items), 3))
            if dims:
                mu[:, list(dims)] = np.einsum("cij,cj->ci", inverse, values[items])
            candidates.append(mu)
        mu = np.maximum(np.concatenate(candidates), 0.0)  # any mu >= 0 bounds; clipping keeps it valid
        best = np.full(len(self.caps), np.inf)
        for start in range(0, len(mu), 4096):
            chunk = mu[start : start + 4096]
            gain = np.maximum(values[None, :] - chunk @ self.demand.T, 0.0)  # candidates x classes
            upper = chunk @ self.room.T + gain @ self.caps.T  # candidates x bins
            best = np.minimum(best, upper.min(axis=0))
        return best * (1 + _ROUNDING) + _ROUNDING * float(np.abs(values).max(initial=0.0))
