"""Starting disruptions and rotations, and launching replacements, as ports.

Theory of operation: deciding services (planner, interruption handler, `longshore rotate`) hand a command to
`DisruptionWorkflow.start` / `RotationWorkflow.start_rotation`; the Step Functions adapter starts an execution
whose name is the command's deterministic `execution_name()`, so starting the same command twice is a no-op
(`StartResult.started` is False the second time). The workflow steps themselves need one more capability:
`ReplacementLauncher` launches a node to take over from the one being disrupted (surge); its progress is then
read from the claim store (`ClaimStore.get(id).state == "initialized"`; a forgotten claim means the launch
failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from longshore.core.claims import NodeClaim
from longshore.core.commands import DisruptionCommand, RotationRequest


@dataclass(frozen=True, slots=True)
class StartResult:
    started: bool  # False when an execution with this name already exists: the idempotency key
    execution_name: str
    execution_arn: str | None = None


class DisruptionWorkflow(Protocol):
    def start(self, command: DisruptionCommand) -> StartResult: ...


class RotationWorkflow(Protocol):
    def start_rotation(self, request: RotationRequest) -> StartResult: ...


class ReplacementUnavailableError(RuntimeError):
    """No replacement can be launched (no compatible offering, pool limit reached...); the message says why."""


class ReplacementLauncher(Protocol):
    def launch_replacement(
        self, claim: NodeClaim | None, node: dict[str, Any] | None, reason: str, now: float
    ) -> str:
        """Launch a node that can take the pods of `claim`/`node`; returns the replacement's claim id.

        Idempotent per (claim, reason): a retried call returns the same claim id. Raises
        `ReplacementUnavailableError` when nothing can be launched.
        """
        ...

    def top_up(
        self, claim: NodeClaim | None, node: dict[str, Any] | None, reason: str, now: float, after: str
    ) -> str | None:
        """Called once the replacement `after` is initialized, before the node is tainted: None when every
        pod the drain would evict has a home on initialized nodes as they are now; else launch a further
        replacement for the pods left without one (other pods took the room while `after` booted) and
        return its claim id, to be waited for in turn.

        Idempotent per `after`. Raises `ReplacementUnavailableError` when nothing can be launched.
        """
        ...
