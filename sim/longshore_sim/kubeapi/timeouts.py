"""Kubernetes API read timeouts on virtual time: the client's side of a `timeout` fault.

Theory of operation: a real read timeout costs the client its read timeout of waiting (the functions use
`adapters.kube.cluster.REQUEST_TIMEOUT`, 30 s) and then urllib3 raises `ReadTimeoutError`, which the
kubernetes client lets through (urllib3's retries are off) to the functions' retry layer. Waiting that long in
wall time would make every simulation slow, and a short wall-clock read timeout would make the functions'
retries take no virtual time at all. So `install` wraps the `PoolManager` of a kubernetes `ApiClient`: before a
request goes out, it asks the emulator's `FaultInjector` for a timeout rule matching the request's route
(`fire_timeout`); when one fires, the request is sent (and its answer thrown away) only if the rule says
`served`, then `sleep` lets the request's read timeout pass on the virtual clock (the cluster keeps running)
and the exact exception urllib3 raises is raised. Watches are left alone (`drop_after` faults cut those).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from urllib3 import Timeout
from urllib3.exceptions import ReadTimeoutError

from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.faults import FaultInjector
from longshore_sim.kubeapi.routing import parse_request

DEFAULT_READ_TIMEOUT_S = 30.0


def read_timeout_of(timeout: Any) -> float:
    """The read timeout a kubernetes client request carries (a urllib3 `Timeout`, a number, or None)."""
    if isinstance(timeout, Timeout):
        value = timeout.read_timeout if timeout.read_timeout is not None else timeout.total
    else:
        value = timeout
    return float(value) if isinstance(value, int | float) and value > 0 else DEFAULT_READ_TIMEOUT_S


def install(api_client: Any, faults: FaultInjector, sleep: Callable[[float], None]) -> None:
    """Make `api_client`'s requests subject to the timeout rules of `faults` (idempotent)."""
    pool = api_client.rest_client.pool_manager
    if getattr(pool, "_longshore_timeouts", False):
        return
    send = pool.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        try:
            route = parse_request(method, urlsplit(url)._replace(scheme="", netloc="").geturl()).route
        except ApiError:
            return send(method, url, *args, **kwargs)
        fault = None if route.verb == "watch" else faults.fire_timeout(route)
        if fault is None:
            return send(method, url, *args, **kwargs)
        if fault.served:
            answer = send(method, url, *args, **{**kwargs, "preload_content": True})
            answer.release_conn()
        read_timeout = read_timeout_of(kwargs.get("timeout"))
        sleep(read_timeout)
        raise ReadTimeoutError(pool, url, f"Read timed out. (read timeout={read_timeout:g})")

    pool.request = request
    pool._longshore_timeouts = True
