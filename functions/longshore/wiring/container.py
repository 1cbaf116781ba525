"""What one Lambda container keeps between invocations: the function it built, rebuilt when the config changes.

Rules:
- The function is built from a `Runtime` on first use (the cold start's init) and kept for warm invocations.
- The cluster config is read again (the SSM parameter; with `poolSource` `cluster` or `both`, also the
  NodePools, EC2NodeClasses and NodeOverlays in the cluster) at the start of every invocation (`get`) and,
  in the functions that loop, before every later pass (`refresh`: the provisioner's and the planner's loops).
  When anything differs from what the function was built with, it is rebuilt before the pass decides
  anything, so a changed budget, limit or requirement takes effect from the next pass of every function, warm
  or cold. A function with `carry` hands its in-memory state to the rebuilt one (`carry(old, new)`), so a
  rebuild is not a cold start.
- A function installed by `install` (tests, the simulation) is used as it is and never rebuilt.
- A failed re-read, or a config that fails to load, keeps the function built from the last good config
  (logged at WARNING), never stops the invocation; the next pass tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from longshore.wiring.runtime import Runtime

T = TypeVar("T")
log = logging.getLogger(__name__)


class Container(Generic[T]):
    def __init__(
        self,
        build: Callable[[Runtime], T],
        new_runtime: Callable[[], Runtime] = Runtime.from_env,
        carry: Callable[[T, T], None] | None = None,
    ) -> None:
        self._build = build
        self._new_runtime = new_runtime
        self._carry = carry
        self._runtime: Runtime | None = None
        self._built: T | None = None

    def install(self, built: T | None) -> None:
        """Use `built` from now on (None: build the production function again on the next `get`)."""
        self._built, self._runtime = built, None

    @property
    def runtime(self) -> Runtime | None:
        return self._runtime

    def current(self) -> T:
        """The function as built (built now if there is none), without re-reading the config."""
        return self._built if self._built is not None else self.get()

    def get(self) -> T:
        """The function at the start of an invocation: built on first use, rebuilt first when the config
        changed."""
        if self._built is None:
            self._runtime = self._new_runtime() if self._new_runtime is not None else Runtime.from_env()
            self._built = self._build(self._runtime)
            return self._built
        fresh = self.refresh()
        return fresh if fresh is not None else self._built

    def ends_with(self, context: Any) -> None:
        """`ends_in` the Lambda context's remaining time (no limit for a context without one: tests, a
        Step Functions task run in process)."""
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        self.ends_in(remaining() / 1000.0 if callable(remaining) else None)

    def ends_in(self, seconds: float | None) -> None:
        """The current invocation ends `seconds` from now (the Lambda context's remaining time): the
        function's Kubernetes calls stop before then (`Runtime.kube_budget`; None: no limit). Nothing for an
        installed function."""
        if self._runtime is not None:
            self._runtime.kube_budget.ends_in(seconds)

    def refresh(self) -> T | None:
        """The function rebuilt on the config as it is now, or None when it did not change (or could not be
        read: the last good one is kept, logged). What a loop calls before each pass after its first."""
        if self._built is None or self._runtime is None:
            return None
        try:
            fresh = self._runtime.refreshed()
            if fresh is None:
                return None
            built = self._build(fresh)  # a config that does not load or validate fails here too
        except Exception as error:  # keep the last good config; the next pass tries again
            log.warning(
                "cannot re-read the cluster config; keeping the last one", extra={"error": str(error)}
            )
            return None
        log.info("the cluster config changed; rebuilt", extra={"source": fresh.config_source})
        if self._carry is not None:
            self._carry(self._built, built)
        self._runtime, self._built = fresh, built
        return built
