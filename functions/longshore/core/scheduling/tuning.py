"""The packer's tuning constants: every magic number of the packing algorithms, in one place.

Changing a value changes plans (and the benchmark's cost ratios); the defaults are the values the benchmark
(`python -m bench.run`) was tuned with. Each attribute's docstring says what it changes and why its default.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PackerTuning:
    """Knobs of `packer.pack`: quality against time. The module-level `TUNING` is the one in use."""

    slices: tuple[float, ...] = (0.95, 0.85, 0.0)
    """Slice shares run as a portfolio from the same forced nodes (cheapest plan wins); 0.0 = no slice, pure greedy by value."""

    reprice: float = 0.9
    """Re-price resources when the value left falls below this share of the value at the last pricing; a tenth keeps the mix of shapes near the LP's without a simplex per node."""

    item_visits: int = 20000
    """Bins filled per node decision are capped at this ÷ the active items (best bounds first): bounds the work of one decision as items grow."""

    min_evaluations: int = 16
    """At least this many bins are filled per node decision, however many items are active, so big inputs still compare several bins."""

    merge_expand: int = 8
    """Patterns with at most this many replicas take part in merging, node by node; bigger patterns are already full and stay whole."""

    merge_window: int = 12
    """Merging looks at this many of the cheapest nodes (a quadratic search: small nodes are where merging pays)."""

    forced_trials: int = 100
    """Candidate bins tried (by trial top-up) for a round of nodes a capped item forces; bounds the cost of one round."""

    forced_slack: float = 0.02
    """Among forced-node bins within this share of the best value per price, the cheapest wins: fillers left over pack as well elsewhere."""

    dear_ratio: float = 1.5
    """An uncapped item whose own offers cost this many times the capped seed's per unit of resource has its nodes opened first (capped pods ride in their room)."""

    greedy_seed_tries: int = 8
    """The best bins of a decision also try a fill that takes as many seed pods as fit first (the slice can cost a whole pod on big nodes)."""

    swap_rounds: int = 64
    """At most this many single-pod swaps towards more valuable pods improve each chosen node; each swap is one pod, so a node rarely needs more."""

    merge_worth: float = 0.75
    """Interchangeable items are merged only when that leaves at most this share of them: otherwise the merge saves little and only perturbs tie-breaks."""

    repack_nodes: int = 16
    """The tail re-pack (`packer_repack`) takes at most this many of the most wasteful nodes into one window."""

    repack_states: int = 50000
    """A window's programme has at most this many states (the product over its positions of pods + 1, interchangeable items sharing a position); 50,000 takes in a whole small plan of a few classes (small-2026010 of `bench/small.py`: 9, 16, 6 + 14 interchangeable and three zone-pinned pods, 28,560 states), which 20,000 split."""

    repack_patterns: int = 500
    """A window with more maximal node patterns than this is retried smaller (the programme would be slow)."""

    repack_min_waste: float = 0.01
    """A window is re-packed only when its nodes' waste is at least this share of the plan's cost: in a big plan the tail is too small a share to pay for the search."""

    repack_dominance: int = 600
    """Up to this many patterns, a pattern a no dearer one holds is dropped (a quadratic test; fewer branches)."""

    repack_work: int = 30000
    """Work units (steps listing patterns, patterns tried, LP solves) of the tail re-pack over one pack, all windows together: its hard work bound (big plans skip the search: their tail is under `repack_min_waste`)."""

    repack_window_work: int = 20000
    """Work units one window may spend; a window that runs out is retried with a quarter of the states."""

    repack_lp_columns: int = 6
    """The tail re-pack keeps at most this many pattern-LP dual solutions as bound columns (`packer_bounds.PatternBound`): each is a dot product per pattern tried."""

    repack_rounds: int = 4
    """At most this many windows are re-packed, each on the plan the previous one improved."""

    seed_first_slack: float = 0.03
    """The seed-first members of the portfolio (`packer_greedy._better`): a node taking more seed pods wins within this share of the best value per price (0 turns them off)."""

    seed_first_shares: tuple[float, ...] = ()
    """The slice shares the seed-first members run with (each member is one more greedy run: about 7 % more CPU per share on the 20,000-pod deployment mixes). None by default: since the integer-aware member (`integer_shares`), (0.95, 0.85) found no cheaper plan on either benchmark table (`python -m bench.run --only main`, `--only small`)."""

    integer_shares: tuple[float, ...] = (0.95,)
    """The slice shares the integer-aware members run with (`packer_bins.integer_factors`: values at whole-pod counts; each member is one more greedy run). 0.85 alone or added found no cheaper plan on the benchmark."""

    node_by_node_up_to: int = 100
    """With at most this many forced nodes, the portfolio also chooses them one by one like ordinary nodes (cheap when few)."""

    zone_choices: int = 3
    """`solve` runs this many choices of the free domains pods with self-selecting zone (or other non-hostname) anti-affinity take, one pod per domain, as a portfolio (cheapest plan wins; choice 0 is the first free domains in order): 2 pods over 3 zones have 3 choices, so the whole plan is costed once per zone pair (each member is one more full solve)."""

    zone_choice_pods: int = 2000
    """The zone-choice portfolio runs on batches of at most this many pods: each member is a whole solve, so the 20,000-pod solves keep their CPU."""


TUNING = PackerTuning()
