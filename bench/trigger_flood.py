"""What a flood of requests to the webhook's function URL costs at most, per month, at the reserved-concurrency cap.

Theory of operation: the function URL is public (the API server cannot sign requests), so anyone who learns
it can send requests; the secret path only decides what a request may do. Lambda runs at most
`RESERVED_CONCURRENCY` copies at once and answers 429 (unbilled) beyond that, so the worst case is every copy
busy all month, back to back with the shortest requests: `concurrency / billed duration` requests per second.
The cost of that is Lambda's request charge plus its GB-second charge (the function's memory); the function
logs nothing for a refused request and the platform's START/END/REPORT lines are off (system log level
WARN), so CloudWatch Logs adds nothing per request.

This script measures, in this process, the handler's own time per request for the three paths a flood can
take (`handlers.trigger.serve` with in-memory ports: the secret and the gate are cached per container, so
no I/O happens on these paths after the first request), and prices the flood with Lambda's billed duration
= max(1 ms, measured time rounded up to 1 ms), which Lambda's per-invoke overhead can only raise by a few
milliseconds (shown with `--overhead-ms`). Prices: us-east-1, arm64, list prices (constants below).

    .venv/bin/python -m bench.trigger_flood [--requests 20000] [--overhead-ms 0]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.webhook import MEMORY_MB, RESERVED_CONCURRENCY

from longshore.adapters.events.admission import function_url_event
from longshore.adapters.memory import MemoryLease
from longshore.adapters.wake_gate import LeaseWakeGate
from longshore.core.triggers import PLANNER, PROVISIONER
from longshore.wiring.trigger import TriggerPorts, logger, serve

REQUEST_PRICE = 0.20 / 1_000_000  # USD per request
GB_SECOND_PRICE = 0.0000133334  # USD per GB-second, arm64
SECONDS_PER_MONTH = 30 * 24 * 3600
SECRET = "x" * 48
SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "events" / "admission" / "admission-pod-create.json"


class _Secret:
    def current(self) -> str:
        return SECRET


class _Trigger:
    def trigger(self, reason: str) -> None:
        del reason


def _per_request_ms(event: dict[str, Any], requests: int) -> float:
    ports = TriggerPorts(
        secret=_Secret(),
        gate=LeaseWakeGate(
            MemoryLease(), lambda: 0.0
        ),  # first request takes the gate; the rest find it closed
        triggers={PROVISIONER: _Trigger(), PLANNER: _Trigger()},
    )
    serve(event, ports)
    start = time.perf_counter()
    for _ in range(requests):
        serve(event, ports)
    return (time.perf_counter() - start) * 1000 / requests


def monthly_cost(concurrency: int, billed_ms: float, memory_mb: int = MEMORY_MB) -> tuple[float, float]:
    """(requests per month, USD per month) with `concurrency` copies busy all month."""
    requests = concurrency * SECONDS_PER_MONTH / (billed_ms / 1000)
    gb_seconds = concurrency * SECONDS_PER_MONTH * memory_mb / 1024
    return requests, requests * REQUEST_PRICE + gb_seconds * GB_SECOND_PRICE


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--overhead-ms", type=float, default=0.0, help="Lambda's per-invoke billed overhead")
    args = parser.parse_args(argv)
    logger.setLevel(
        "ERROR"
    )  # the 400 path logs a warning per request (only a caller with the secret gets there)
    review = json.loads(json.loads(SAMPLE.read_text())["body"])
    paths: dict[str, Callable[[], dict[str, Any]]] = {
        "refused (403, wrong path)": lambda: function_url_event(review, secret="wrong"),
        "authenticated, gate closed": lambda: function_url_event(review, secret=SECRET),
        "authenticated, not JSON (400)": lambda: {**function_url_event(review, secret=SECRET), "body": "{x"},
    }
    print(
        f"trigger flood: {MEMORY_MB} MB, reserved concurrency {RESERVED_CONCURRENCY}, {args.requests} requests/path"
    )
    shortest = math.inf
    for name, make in paths.items():
        measured = _per_request_ms(make(), args.requests)
        billed = max(1.0, math.ceil(measured + args.overhead_ms))
        shortest = min(shortest, billed)
        print(f"  {name:32s} handler {measured:7.3f} ms/request -> billed {billed:.0f} ms")
    for concurrency in sorted({1, 2, RESERVED_CONCURRENCY, 10}):
        requests, usd = monthly_cost(concurrency, shortest)
        mark = " (deployed)" if concurrency == RESERVED_CONCURRENCY else ""
        print(
            f"  worst case at concurrency {concurrency:2d}{mark}: {requests / 1e9:6.2f} billion requests/month, "
            f"${usd:,.0f}/month"
        )


if __name__ == "__main__":
    main()
