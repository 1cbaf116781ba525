"""What one invocation of a function loop did: one report type for the provisioner's and the planner's loops.

Theory of operation. The provisioner (`services.provisioner.run_invocation`) and the disruption planner
(`services.disruption_invocation.run_invocation`) are the two functions that loop: an invocation makes
passes until one is quiet, another invocation holds the lease, or the deadline is near. Each pass has its
function's own pass report (`provisioner.PassResult`, `disruption.PassReport`); the invocation as a whole
is an `InvocationReport`, the same envelope for both (how many passes, why the loop stopped) around the
function's own totals (`totals`: claims launched and failed for the provisioner, executions started and
consolidations pending for the planner). `to_dict()` is what the handler logs and returns: `passes`, then
the totals' fields, then `stopped`, so every function's invocation reads the same way.

The interruption and workflow-steps functions do not loop: their answer is the SQS partial-batch response
and the state machine's next state, whose shapes SQS and Step Functions fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

Stopped = Literal["deadline", "quiet", "lease-held", "out-of-time"]
"""Why the loop ended: the deadline was near, a pass left nothing due, another invocation holds the lease, or a
pass's Kubernetes call ran out of the invocation's time (`adapters.kube.retry.CallBudget`) before it finished."""


class InvocationTotals(Protocol):
    def to_dict(self) -> dict[str, Any]:
        """The function's own totals for the invocation, as log fields."""
        ...


T = TypeVar("T", bound=InvocationTotals)


@dataclass(frozen=True, slots=True)
class InvocationReport(Generic[T]):
    """What one Lambda invocation of a function loop did (the handler logs and returns `to_dict()`)."""

    passes: int
    totals: T
    stopped: Stopped = "deadline"
    unfinished: str = ""  # with "out-of-time": the call that ran out, so the pass it was in did not finish

    def to_dict(self) -> dict[str, Any]:
        out = {"passes": self.passes, **self.totals.to_dict(), "stopped": self.stopped}
        if self.unfinished:
            out["unfinished"] = self.unfinished
        return out
