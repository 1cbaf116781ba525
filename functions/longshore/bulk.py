"""Garbage-collector handling around bulk decoding, shared by the Kubernetes adapter and the snapshot service.

Rules: `gc_paused()` disables the cyclic collector for the duration of a block that builds many small,
acyclic, long-lived objects (a list of pods or nodes decoded from JSON, or parsed into `Pod`s); reference
counting still frees garbage as it goes. On leaving the block the collector is re-enabled only if it was
enabled on entry (nesting is safe: an inner block never re-enables a collector an outer one paused). If the
block left more than `BULK_OBJECTS` tracked allocations pending, the survivors are collected once and then
frozen (`gc.freeze`) so later collections never walk them again.

Stdlib only and outside every layer of the import contract, so any layer may import it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

BULK_OBJECTS: Final = 100_000
"""A paused block that made more tracked objects than this moves the survivors out of the collector's reach
(`gc.freeze`): a warm container holds millions of long-lived, acyclic objects (pods, compact manifests), and a
full collection walking them cost more than the rest of a warm 50,000-pod pass (bench/scale.py)."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a large list is decoded or parsed.

    Decoding creates millions of small, acyclic, long-lived dicts and lists; each collection walks all of them,
    which made a 20,000-pod list two to three times as expensive (bench/scale.py). Reference counting still
    frees everything at once; the collector runs again afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            # Collect what is garbage now, then never walk the rest again.
            if gc.get_count()[0] > BULK_OBJECTS:
                gc.collect()
                gc.freeze()
