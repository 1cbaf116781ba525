"""Asking another Longshore function to run now: the provisioner and planner triggers.

Theory of operation: the provisioner and the planner also run on a schedule (every minute); a trigger only
makes them run sooner. The interruption handler triggers the provisioner so pods evicted from a reclaimed
node get capacity within seconds; the admission webhook (`handlers.trigger`) triggers the provisioner when a
pod is created and the planner when a bound pod is deleted. A trigger is fire-and-forget and idempotent:
triggering twice costs one extra run, which finds nothing new to do. Adapters: `adapters.aws.lambda_trigger`
(asynchronous Lambda invoke); tests and the simulation record triggers in memory.
"""

from __future__ import annotations

from typing import Protocol


class Trigger(Protocol):
    def trigger(self, reason: str) -> None:
        """Ask the function to run as soon as possible; `reason` is logged by the function."""
        ...


ProvisionerTrigger = Trigger
