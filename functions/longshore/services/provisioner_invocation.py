"""The provisioner Lambda's loop: passes of `ProvisionerService` until one is quiet or the deadline is near.

Rules:
- Passes run while more than `deadline_margin_s` of the invocation is left; between passes that found nothing
  to batch the loop waits `poll_s` (`idle_wait`); a quiet pass (`PassResult.quiet`) ends it when
  `exit_when_quiet`.
- A pass whose Kubernetes calls kept failing after the adapter's retries is tried again at the next poll; one
  whose call ran out of the invocation's time (`ClusterUnavailableError.out_of_time`, the adapter's
  `CallBudget`) ends the invocation cleanly: `stopped` "out-of-time", `unfinished` naming the call.
- With `reload`, every pass after the first starts on the service rebuilt for a changed cluster config, which
  takes the run (its lease) over; the lease is released once, at the end, however the loop ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from longshore.ports.kube import ClusterUnavailableError
from longshore.services.invocation import InvocationReport, Stopped

if TYPE_CHECKING:
    from longshore.services.provisioner import PassResult, ProvisionerService

log = logging.getLogger("longshore.services.provisioner")  # the provisioner's log lines, as before the move


@dataclass(frozen=True, slots=True)
class ProvisionerTotals:
    """The provisioner's own totals of one invocation (inside its `services.invocation.InvocationReport`)."""

    launched: tuple[str, ...]
    failed: tuple[str, ...]
    lease_waits: int

    def to_dict(self) -> dict[str, Any]:
        return {"launched": list(self.launched), "failed": list(self.failed), "lease_waits": self.lease_waits}


ProvisionerInvocation: TypeAlias = InvocationReport[ProvisionerTotals]


def run_invocation(
    service: ProvisionerService,
    *,
    remaining_s: Callable[[], float],
    idle_wait: Callable[[float], None],
    on_pass: Callable[[PassResult], None] | None = None,
    reload: Callable[[ProvisionerService], ProvisionerService | None] | None = None,
) -> ProvisionerInvocation:
    """Run passes until one is quiet (`PassResult.quiet`, with `exit_when_quiet`) or `deadline_margin_s`
    before the deadline; between passes that found nothing to batch, `idle_wait(poll_s)`.

    Stopping when quiet is what keeps the function cheap: a quiet cluster costs one pass a minute, and the
    admission webhook's trigger (`handlers.trigger`) starts a run as soon as a pod is created, so a new pod
    does not wait for the schedule. While pods are pending, about to be judged by the scheduler, or claims
    are between launch and initialization, the loop goes on polling every `poll_s`.

    `reload(service)`, before every pass after the first, answers the service rebuilt on a changed cluster
    config (`wiring.provisioner.reloader`), which takes the run over (`take_over`), or None: a changed limit or
    requirement is honoured from the next pass."""
    settings = service.settings
    passes = waits = 0
    first = True
    launched: list[str] = []
    failed: list[str] = []
    stopped: Stopped = "deadline"
    unfinished = ""
    try:
        while remaining_s() > settings.deadline_margin_s:
            if not first and reload is not None:
                service = reload(service) or service
            first = False
            try:
                result = service.run_pass()
            except ClusterUnavailableError as error:
                if error.out_of_time:  # the invocation's time ran out mid-pass: end cleanly, say what
                    log.warning(
                        "out of time during a pass; ending the invocation", extra={"error": str(error)}
                    )
                    stopped, unfinished = "out-of-time", str(error)
                    break
                # The API server kept failing after the adapter's retries: try again next poll, not in a loop.
                log.warning("the Kubernetes API is unavailable; retrying", extra={"error": str(error)})
                idle_wait(settings.poll_s)
                continue
            passes += 1
            launched.extend(result.launched)
            failed.extend(o.claim_id for o in result.failed)
            if on_pass is not None:
                on_pass(result)
            if result.status == "planned" and (result.pending or result.launches):
                continue  # batching already waited at least batch_idle_s (a buffers-only pass did not)
            if settings.exit_when_quiet and result.quiet:
                stopped = "quiet"
                break
            waits += result.status in ("lease-held", "lease-lost")
            idle_wait(settings.poll_s)
    finally:
        service.release()
    totals = ProvisionerTotals(tuple(launched), tuple(failed), waits)
    return InvocationReport(passes, totals, stopped, unfinished)
