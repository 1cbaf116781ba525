"""The cloud as the provisioner sees it: launch a node claim, and read or terminate the instances we own.

Theory of operation: `Launcher.launch` turns one `LaunchRequest` into at most one instance, idempotently (the
claim id, written to the store before the launch, is the key). `Instances` reads and terminates instances by
id and lists those tagged as ours, which the lifecycle uses for registration timeouts and orphan collection.
Both speak core types only; the EC2 implementations live in `adapters.aws`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from longshore.core.claims import CloudInstance, LaunchRequest, LaunchResult


class Launcher(Protocol):
    def launch(self, request: LaunchRequest, now: float) -> LaunchResult: ...


class Instances(Protocol):
    def describe(self, instance_ids: Iterable[str]) -> tuple[CloudInstance, ...]:
        """The instances that exist among `instance_ids` (any state; unknown ids are left out)."""
        ...

    def terminate(self, instance_ids: Iterable[str]) -> None:
        """Terminate instances (idempotent; already-terminated or unknown ids are ignored)."""
        ...

    def list_owned(self) -> tuple[CloudInstance, ...]:
        """Live (not terminated) instances tagged for this cluster."""
        ...

    def find_by_claim(self, claim_id: str) -> CloudInstance | None:
        """The live instance tagged with this claim id, if any."""
        ...
