"""`ports.triggers.WakeGate` on a shared `ports.store.Lease`: a burst of admissions becomes one wake per target.

Theory of operation: each wake takes the lease `wake-<target>` for `window_s` with a fresh owner, so across
all trigger containers at most one caller per window gets True (DynamoDB's conditional write decides:
`adapters.aws.dynamodb.DynamoLease`). A container also remembers until when it knows the lease is held (its
own win, or a loss, which means somebody holds it for at most `window_s` more) and answers False without
a DynamoDB call until then, so a flood costs one conditional write per container per window, not one per
request. DynamoDB's TTL deletes the expired lease rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

from longshore.ports.store import Lease

DEFAULT_WINDOW_S: Final = 10.0
LEASE_PREFIX: Final = "wake-"


class LeaseWakeGate:
    def __init__(self, lease: Lease, now: Callable[[], float], window_s: float = DEFAULT_WINDOW_S) -> None:
        self._lease = lease
        self._now = now
        self._window_s = window_s
        self._held_until: dict[str, float] = {}

    def claim(self, target: str) -> bool:
        now = self._now()
        if now < self._held_until.get(target, 0.0):
            return False
        won = self._lease.acquire(f"{LEASE_PREFIX}{target}", uuid.uuid4().hex, now, self._window_s)
        self._held_until[target] = now + self._window_s
        return won
