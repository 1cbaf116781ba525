"""The packer's working state: what is left to place, the groups, bins, prices and the memos forks share."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from longshore.core.scheduling.duals import ResourcePricer
from longshore.core.scheduling.packer_bins import effective_bins, group_prices, item_values
from longshore.core.scheduling.packer_model import PRICE_VERSIONS, BinType, Candidate, Item, Offer
from longshore.core.scheduling.tuning import TUNING


class PackerState:
    """One packing run's progress (counts left, dead items, limit room, resource prices) and its memos.

    `fork` copies the progress for another member of the portfolio; memos keyed by what they are computed
    from (duals by demand, tables by prices, skews by type, holding bins by load) stay shared, since equal
    keys give equal values in every fork, and bins cache their value per `price_version`, unique per fork."""

    def __init__(
        self,
        items: Sequence[Item],
        types: Sequence[BinType],
        offers: Sequence[Offer],
        limit_room: Sequence[int] | None,
        slice_share: float = TUNING.slices[0],
        top_up: bool = True,
    ) -> None:
        self.slice = slice_share
        self.top_up = top_up
        self.dear_first = False  # open the nodes of much dearer uncapped items before the forced ones
        self.forced_single = False  # forced nodes one at a time, each offered every filler (mixes types)
        self.seed_slack = 0.0  # > 0: the seed-first member (`packer_greedy._better`)
        self.integer_factors: list[float] = []  # the integer-aware member (`packer_bins.integer_factors`)
        self.bound_factor = 1.0  # the largest of them: bins' efficiency bounds scale by it
        self.items = items
        self.types = types
        self.offers = offers
        self.limit_room = list(limit_room) if limit_room is not None else None
        self.remaining = [item.count for item in items]
        self.dims = len(types[0].room) if types else len(items[0].demand) if items else 0
        masks: dict[int, int] = {}
        self.group_of = [masks.setdefault(item.offers, len(masks)) for item in items]
        self.group_masks = list(masks)
        self.candidates = effective_bins(self)
        self.by_price = sorted(
            self.candidates, key=lambda c: (c.price, -sum(types[c.type_index].room), c.offer)
        )
        self.group_rows: list[tuple[list[tuple[int, ...]], list[float]]] = []
        self.pricers: list[ResourcePricer] = []
        # (group, demand) -> resource prices; shared by forks, which often re-price at the same demand
        self.dual_cache: dict[tuple[int, tuple[float, ...]], tuple[float, ...]] = {}
        # resource prices -> the LP value of every candidate type's room at them; shared by forks too
        self.table_cache: dict[tuple[float, ...], list[float]] = {}
        self.best_cache: dict[tuple[int, ...], list[float]] = {}  # per tuple of tables, the per-type best
        self.candidate_types = sorted({c.type_index for c in self.candidates})
        self.skew_cache: dict[int, tuple[list[int], dict[int, float]]] = {}
        self.unit_prices: list[list[float]] = []  # per group, the cheapest price per unit of each resource
        self.initial_prices = group_prices(self)
        self.holding_cache: dict[tuple[int, tuple[int, ...]], list[Candidate]] = {}
        self.prices = self.initial_prices
        self.price_version = next(PRICE_VERSIONS)
        self.values = item_values(self)
        self.type_values: list[list[float] | None] = [None] * len(self.group_masks)
        self.bits_of: dict[int, tuple[int, ...]] = {}
        self.priced_at = sum(self.remaining[k] * self.values[k] for k in range(len(self.items)))
        self.dead: set[int] = set()
        self.conflicted_by: list[set[int]] = [set() for _ in items]
        for k, item in enumerate(items):
            for j in item.conflicts:
                self.conflicted_by[j].add(k)
        self.limit_blocked: set[int] = set()
        self.capped = [
            k for k, item in enumerate(items) if item.cap or item.groups or item.conflicts or item.together
        ]

    def fork(self, slice_share: float, top_up: bool | None = None) -> PackerState:
        """A copy of this packer's progress that continues with another slice share (the portfolio)."""
        twin = copy.copy(self)
        twin.slice = slice_share
        if top_up is not None:
            twin.top_up = top_up
        twin.remaining = list(self.remaining)
        twin.limit_room = list(self.limit_room) if self.limit_room is not None else None
        twin.dead = set(self.dead)
        twin.limit_blocked = set(self.limit_blocked)
        twin.type_values = list(self.type_values)
        twin.price_version = next(PRICE_VERSIONS)  # bins cache their value per version; forks diverge
        return twin

    def within_limits(self, type_index: int, replicas: int) -> bool:
        if self.limit_room is None:
            return True
        usage = self.types[type_index].limit_usage
        return all(amount * replicas <= room for amount, room in zip(usage, self.limit_room, strict=True))
