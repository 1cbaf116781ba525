"""Asking another Longshore function to run now: the provisioner trigger.

Theory of operation: the provisioner also runs on a schedule; a trigger only makes it run sooner (the
interruption handler uses it so pods evicted from a reclaimed node get capacity within seconds, not at the
next tick). A trigger is fire-and-forget and idempotent: triggering twice costs one extra provisioner run,
which finds nothing new to do. Adapters: `adapters.aws.lambda_trigger` (asynchronous Lambda invoke); tests
and the simulation record triggers in memory.
"""

from __future__ import annotations

from typing import Protocol


class ProvisionerTrigger(Protocol):
    def trigger(self, reason: str) -> None:
        """Ask the provisioner to run as soon as possible; `reason` is logged by the provisioner."""
        ...
