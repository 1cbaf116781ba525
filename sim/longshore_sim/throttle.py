"""Throttling injected in front of moto: the next N calls of an operation fail before they are sent.

Rules:

- `ThrottleInjector` answers from a first-registered `before-send` hook, so the request never reaches moto
  (it is pointed at an address no moto backend matches) and nothing it asked for happens: a throttled
  CreateFleet launches nothing, a throttled PutItem writes nothing. botocore's real retry machinery, and then
  Longshore's own bounded retry, are what recover from it; production code and moto are unchanged.
- The answer is the one the service gives: for query/XML protocols (EC2) an HTTP 503 with the error `code`
  (`RequestLimitExceeded` by default) in EC2's XML error body; for JSON protocols (DynamoDB) an HTTP 400 whose
  body's `__type` is the code (e.g. `ProvisionedThroughputExceededException`).
- Counts are per operation name and exact: `throttle(op, n)` fails the next `n` attempts of `op` (every
  botocore retry attempt counts as one), then lets calls through; `injected` records how many were failed.
  The counters are guarded by a lock, so clients used from several threads see each count spent once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any, Final

from botocore.awsrequest import AWSResponse  # type: ignore[import-untyped]


class RawBody:
    """A response body botocore can read (for answers injected before a request is sent)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterable[bytes]:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body


_THROTTLE_BODY: Final = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
    b"<Message>Request limit exceeded.</Message></Error></Errors><RequestID>longshore-throttle</RequestID></Response>"
)


_NOWHERE: Final = "http://throttled.longshore.invalid/"


class ThrottleInjector:
    """Fail the next N calls of chosen operations with a throttling error, before they reach moto."""

    def __init__(self, code: str = "RequestLimitExceeded") -> None:
        self.code = code
        self._pending: dict[str, int] = {}
        self.injected: dict[str, int] = {}
        self._lock = threading.Lock()

    def throttle(self, operation: str, times: int) -> None:
        """Throttle the next `times` calls of `operation` (e.g. "CreateFleet"); 0 stops."""
        with self._lock:
            self._pending[operation] = times

    def remaining(self, operation: str) -> int:
        with self._lock:
            return self._pending.get(operation, 0)

    def attach(self, target: Any, service: str = "ec2") -> ThrottleInjector:
        """Hook into a client (its own service), or into a boto3 session for the `service` clients it creates."""
        if hasattr(target, "meta"):
            events, service = target.meta.events, target.meta.service_model.service_id.hyphenize()
        else:
            events = target.events
        uid = f"longshore-throttle-{id(self)}-{service}"
        events.register_first(f"before-send.{service}", self._before_send, unique_id=uid)
        return self

    def _before_send(self, request: Any, **kwargs: Any) -> Any:
        operation = str(kwargs.get("event_name", "")).rsplit(".", 1)[-1]
        with self._lock:
            left = self._pending.get(operation, 0)
            if left <= 0:
                return None
            self._pending[operation] = left - 1
            self.injected[operation] = self.injected.get(operation, 0) + 1
        kind = request.headers.get("Content-Type", b"")
        if (kind.decode() if isinstance(kind, bytes) else str(kind)).startswith("application/x-amz-json"):
            # JSON protocols (DynamoDB): the error is the body's `__type`, answered with 400 as DynamoDB does
            payload = {
                "__type": f"com.amazonaws.dynamodb.v20120810#{self.code}",
                "message": "Throughput exceeded",
            }
            status, content_type, body = 400, "application/x-amz-json-1.0", json.dumps(payload).encode()
        else:
            status, content_type, body = (
                503,
                "text/xml",
                _THROTTLE_BODY.replace(b"{code}", self.code.encode()),
            )
        url = request.url
        # botocore calls every before-send handler; moto's in-process stubber comes after us and would still
        # execute the request. Point this (single-use: botocore builds a new request per attempt) request at
        # an address no moto backend matches, so the throttled call really does nothing.
        request.url = _NOWHERE
        return AWSResponse(url, status, {"Content-Type": content_type}, RawBody(body))
