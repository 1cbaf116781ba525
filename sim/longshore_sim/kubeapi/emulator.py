"""`KubeApiEmulator`: a Kubernetes API server on 127.0.0.1 for the real kubernetes client, plus a Python API.

Theory of operation: the emulator owns an `ObjectStore` (state and semantics), a `FaultInjector`, and an
HTTP server thread on an ephemeral loopback port. Production code talks to it through
`emulator.api_client()`, a `kubernetes.client.ApiClient` configured with the emulator's URL (and bearer
token when auth is on), exactly as it would talk to EKS. Tests and the simulated cluster read and seed state
directly through `emulator.store` without HTTP.

Time: the store's clock decides grace periods and timestamps. Pass the simulation's `VirtualClock` and the
running emulator subscribes to it, finishing due deletions and waking watches whenever virtual time moves
(`store.process_due()` does the same by hand). With the default wall clock, due deletions are finished lazily
on every request.

Usage:
    with KubeApiEmulator(clock=clock) as emulator:
        core = kubernetes.client.CoreV1Api(emulator.api_client())
        core.list_namespaced_pod("default", label_selector="app=web")
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from longshore.adapters.clock import WallClock
from longshore.ports.clock import Clock
from longshore_sim.kubeapi import disruption
from longshore_sim.kubeapi.faults import FaultInjector
from longshore_sim.kubeapi.server import EmulatorHTTPServer, RequestRecord, ServerState
from longshore_sim.kubeapi.store import DEFAULT_NAMESPACES, ObjectStore


class KubeApiEmulator:
    """A Kubernetes API server emulator; use as a context manager or call `start()`/`stop()`."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        token: str | Callable[[str], bool] | None = None,
        kubernetes_version: str = "1.31",
        seed: int = 0,
        namespaces: tuple[str, ...] = DEFAULT_NAMESPACES,
        default_tolerations: bool = True,
        history: int = 200_000,
    ) -> None:
        """
        Args:
            clock: time source for timestamps and grace periods (default: the wall clock).
            token: None for no auth; a string the `Authorization: Bearer` header must equal; or a predicate.
            kubernetes_version: what `/version` reports.
            seed: makes generated names and uids reproducible.
            namespaces: namespaces that exist from the start.
            default_tolerations: add the DefaultTolerationSeconds admission tolerations to new pods.
            history: how many changes watches can replay (older resourceVersions get 410 Gone).
        """
        self.clock: Clock = clock or WallClock()
        self.store = ObjectStore(
            self.clock,
            seed=seed,
            history=history,
            namespaces=namespaces,
            default_tolerations=default_tolerations,
        )
        self.faults = FaultInjector()
        check: Callable[[str], bool] | None
        if token is None:
            check = None
        elif isinstance(token, str):
            expected = token
            check = lambda sent: sent == expected  # noqa: E731
        else:
            check = token
        self._state = ServerState(self.store, self.faults, kubernetes_version, check)
        self.token = token if isinstance(token, str) else None
        self._server: EmulatorHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> KubeApiEmulator:
        if self._server is not None:
            return self
        self._state.stopping.clear()
        add_listener = getattr(self.clock, "add_listener", None)
        if callable(add_listener):
            add_listener(self._on_clock)
        self._server = EmulatorHTTPServer(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="kube-api-emulator",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._state.stopping.set()
        self.store.notify_watchers()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None
        remove_listener = getattr(self.clock, "remove_listener", None)
        if callable(remove_listener):
            remove_listener(self._on_clock)

    def __enter__(self) -> KubeApiEmulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ---------------------------------------------------------------- access

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the emulator is not running; call start() or use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def api_client(self, token: str | None = None) -> Any:
        """A `kubernetes.client.ApiClient` pointed at the emulator (bearer token: `token` or the configured one)."""
        from kubernetes import client

        configuration = client.Configuration(host=self.url)
        bearer = token if token is not None else self.token
        if bearer:
            # kubernetes 36 reads the token under "BearerToken" (falling back to "authorization") but takes the
            # prefix from "BearerToken" only: a prefix under "authorization" alone is silently dropped.
            configuration.api_key = {"BearerToken": bearer}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        return client.ApiClient(configuration)

    @property
    def requests(self) -> list[RequestRecord]:
        """The most recent requests served (method, path, verb, resource, status)."""
        return list(self._state.requests)

    @property
    def bytes_sent(self) -> int:
        """Response body bytes sent so far, after compression (what clients read over the wire)."""
        return self._state.bytes_sent

    @property
    def failures(self) -> list[str]:
        """Tracebacks of unexpected errors inside the emulator (each answered with a 500)."""
        return list(self._state.failures)

    def refresh_disruption_budgets(self, namespace: str | None = None) -> None:
        """Recompute PDB statuses now (HTTP reads of PDBs do this on their own)."""
        disruption.refresh(self.store, namespace)

    def _on_clock(self, _now: float) -> None:
        self.store.process_due()
        self.store.notify_watchers()
