"""What one Lambda container keeps between invocations: the function it built, rebuilt when the config changes.

Rules:
- The function is built from a `Runtime` on first use (the cold start's init) and kept for warm invocations.
- At the start of every invocation the cluster config is read again (the SSM parameter; with `poolSource`
  `cluster` or `both`, also the NodePools and EC2NodeClasses in the cluster). When anything differs from what
  the function was built with, it is rebuilt before the invocation does anything, so a changed budget, limit or
  requirement takes effect from the next invocation of every function, warm or cold.
- A function installed by `install` (tests, the simulation) is used as it is and never rebuilt.
- A failed re-read keeps the function built from the last good config (logged), never stops the invocation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from longshore.wiring.runtime import Runtime

T = TypeVar("T")
log = logging.getLogger(__name__)


class Container(Generic[T]):
    def __init__(
        self, build: Callable[[Runtime], T], new_runtime: Callable[[], Runtime] = Runtime.from_env
    ) -> None:
        self._build = build
        self._new_runtime = new_runtime
        self._runtime: Runtime | None = None
        self._built: T | None = None

    def install(self, built: T | None) -> None:
        """Use `built` from now on (None: build the production function again on the next `get`)."""
        self._built, self._runtime = built, None

    @property
    def runtime(self) -> Runtime | None:
        return self._runtime

    def current(self) -> T:
        """The function as built (built now if there is none), without re-reading the config: what a warm
        container uses between two passes of one invocation."""
        return self._built if self._built is not None else self.get()

    def get(self) -> T:
        if self._built is None:
            self._runtime = self._new_runtime() if self._new_runtime is not None else Runtime.from_env()
            self._built = self._build(self._runtime)
        elif self._runtime is not None:
            try:
                fresh = self._runtime.refreshed()
            except Exception as error:  # keep the last good config; the next invocation tries again
                log.warning(
                    "cannot re-read the cluster config; keeping the last one", extra={"error": str(error)}
                )
                return self._built
            if fresh is not None:
                log.info("the cluster config changed; rebuilding", extra={"source": fresh.config_source})
                self._runtime, self._built = fresh, self._build(fresh)
        return self._built
