"""Asking another Longshore function to run now: the provisioner and planner triggers, and the webhook's guards.

Theory of operation: the provisioner and the planner also run on a schedule (every minute); a trigger only
makes them run sooner. The interruption handler triggers the provisioner so pods evicted from a reclaimed
node get capacity within seconds; the admission webhook (`handlers.trigger`) triggers the provisioner when a
pod is created and the planner when a bound pod is deleted. A trigger is fire-and-forget and idempotent:
triggering twice costs one extra run, which finds nothing new to do. Adapters: `adapters.aws.lambda_trigger`
(asynchronous Lambda invoke); tests and the simulation record triggers in memory.

The webhook's function URL is public (the API server cannot sign requests), so two more ports guard it:
`WebhookSecret` (the per-cluster secret the URL path must carry, `adapters.aws.secrets`) and `WakeGate`
(at most one wake per target per window, shared by every container: `adapters.wake_gate`).
"""

from __future__ import annotations

from typing import Protocol


class Trigger(Protocol):
    def trigger(self, reason: str) -> None:
        """Ask the function to run as soon as possible; `reason` is logged by the function."""
        ...


ProvisionerTrigger = Trigger


class WebhookSecret(Protocol):
    def current(self) -> str:
        """The secret a request's URL path must carry. Read from its store at most once per cache period per
        container, never once per request; raises when the store cannot be read."""
        ...


class WakeGate(Protocol):
    def claim(self, target: str) -> bool:
        """True when the caller should wake `target` now: at most one True per target per window across all
        containers (the state lives outside the container). Raises when the shared state cannot be reached."""
        ...
