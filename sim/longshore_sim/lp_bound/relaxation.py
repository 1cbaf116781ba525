"""Upper bounds on every bin's pricing problem at once (`colgen`): the LP relaxation of the bounded knapsack
`max v . a  s.t.  D a <= room_b, 0 <= a <= cap_b`, evaluated through its dual.

Theory of operation: for any mu >= 0 (one price per dimension: millicores, bytes, pod slots) and any filling a
of bin b,

    v . a = sum_k a_k (v_k - mu . d_k) + mu . (D a)  <=  sum_k cap_bk max(0, v_k - mu . d_k) + mu . room_b

since 0 <= a_k <= cap_bk and D a <= room_b. So every mu gives a valid upper bound U_b(mu) on the bin's
pricing optimum (weak duality), and the least over mu is the LP relaxation's optimum. That least is reached
at a vertex of the arrangement of the hyperplanes {mu_r = 0} and {mu . d_k = v_k}: three of them meeting in
one point. The candidates are therefore every such point (clipped at 0): for each set of dimensions held at 0
and each set of items of the complementing size, the solution of the small linear system. Their matrices
depend only on the demands, so they are inverted once; each round only multiplies by the duals. With k
classes there are about k^3/6 candidates, evaluated against every bin in one matrix product; beyond
`_CANDIDATE_LIMIT` systems of a size (about 50 classes for three items), only the smaller ones are used: the
bound is then looser (at worst the per-dimension fractional one) but still valid.

Validity does not depend on the candidates being exact vertices (any mu >= 0 bounds), only on the
arithmetic: the result is raised by a relative 1e-9 against rounding. This bound is at most the per-dimension
fractional knapsack bound (that is the same LP with two of the three constraints dropped).
"""

from __future__ import annotations

from itertools import combinations
from math import comb
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
        self.groups: list[tuple[tuple[int, ...], Any, Any]] = []  # (dims, items per system, inverses)
        self.groups.append(((), np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0, 0))))  # mu = 0
        for size in range(1, 4):
            if 3 * comb(classes, size) > _CANDIDATE_LIMIT:  # too many classes: the smaller systems only
                continue
            combos = np.array(list(combinations(range(classes), size)), dtype=np.int64).reshape(-1, size)
            for dims in combinations(range(3), size):
                matrices = self.demand[combos][:, :, list(dims)]  # systems x items x dims
                regular = np.abs(np.linalg.det(matrices)) > 1e-12
                if regular.any():
                    self.groups.append((dims, combos[regular], np.linalg.inv(matrices[regular])))

    def bounds(self, duals: Any, bins: Any = None) -> Any:
        """Per bin (of the indices `bins`, every bin by default), an upper bound on `max duals . a` over the
        bin's fillings: the LP relaxation's optimum."""
        import numpy as np

        caps = self.caps if bins is None else self.caps[bins]
        room = self.room if bins is None else self.room[bins]
        values = np.asarray(duals, dtype=float)
        candidates = []
        for dims, items, inverse in self.groups:
            mu = np.zeros((len(items), 3))
            if dims:
                mu[:, list(dims)] = np.einsum("cij,cj->ci", inverse, values[items])
            candidates.append(mu)
        mu = np.maximum(np.concatenate(candidates), 0.0)  # any mu >= 0 bounds; clipping keeps it valid
        best = np.full(len(caps), np.inf)
        for start in range(0, len(mu), 4096):
            chunk = mu[start : start + 4096]
            gain = np.maximum(values[None, :] - chunk @ self.demand.T, 0.0)  # candidates x classes
            upper = chunk @ room.T + gain @ caps.T  # candidates x bins
            best = np.minimum(best, upper.min(axis=0))
        return best * (1 + _ROUNDING) + _ROUNDING * float(np.abs(values).max(initial=0.0))
