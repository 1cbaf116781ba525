"""The HTTP face of the emulator: route Kubernetes REST paths to the store, stream watches, inject faults.

Theory of operation: a stdlib `ThreadingHTTPServer` speaks HTTP/1.1 with keep-alive on 127.0.0.1 (one thread
per connection), which is what the kubernetes client's urllib3 pool expects. Each request is parsed into a
`Request` (`kubeapi.routing`), checked against the bearer token when one is configured, passed through the fault injector, and dispatched to the store, `disruption`
(evictions and PDB status), `subresources` (eviction, binding, scale) or `discovery`. Errors are `ApiError`s rendered as `Status` objects; anything
unexpected becomes a 500 Status and is kept in `server.failures` for tests to inspect.

Watches (`watch=true`, `watch=True`, `watch=1`, or the legacy `/watch/` path prefix) stream one JSON event per
line with chunked transfer encoding. Without a resourceVersion (or with "0") the stream starts with ADDED for
every matching object; with one it replays the change log after that version (410 Gone as an ERROR event
when it is too old). The stream ends when `timeoutSeconds` passes in wall time or on the emulator's clock
(whichever comes first, so simulations with a virtual clock do not wait for real time), and ends abruptly
(no final chunk) when a `drop_after` fault fires. A watch whose `Accept` asks for `as=Table` (`kubectl get -w`)
gets each event's object as a one-row Table, as the API server sends it.

Responses of 128 KiB or more are gzipped when the request says `Accept-Encoding: gzip`, as the API server's
APIResponseCompression does; `bytes_sent` counts what went over the wire.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from longshore_sim.kubeapi import discovery, disruption, errors, openapi, patching, subresources, tables
from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.faults import FaultInjector
from longshore_sim.kubeapi.meta import JSON, metadata, name_of
from longshore_sim.kubeapi.routing import Request, parse_request, request_object, truthy
from longshore_sim.kubeapi.selectors import parse_field_selector, parse_label_selector
from longshore_sim.kubeapi.store import ObjectStore
from longshore_sim.kubeapi.subresources import success_status
from longshore_sim.kubeapi.watchlog import WatchFilter, check_resource_version

DEFAULT_WATCH_TIMEOUT = 1800.0
GZIP_THRESHOLD = 128 * 1024
"""Like the API server's APIResponseCompression: bodies of 128 KiB or more are gzipped when the client asks."""
GZIP_LEVEL = 1
_WAKE_INTERVAL = 0.2


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One served request, for observers (`emulator.requests`)."""

    method: str
    path: str
    verb: str
    resource: str
    status: int


@dataclass
class ServerState:
    """What request handlers share: the store, faults, auth and bookkeeping."""

    store: ObjectStore
    faults: FaultInjector
    kubernetes_version: str
    token_check: Callable[[str], bool] | None = None
    stopping: threading.Event = field(default_factory=threading.Event)
    requests: deque[RequestRecord] = field(default_factory=lambda: deque(maxlen=10_000))
    failures: list[str] = field(default_factory=list)
    bytes_sent: int = 0
    """Response body bytes written (after compression): what clients read over the wire, for benchmarks."""


class EmulatorHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, state: ServerState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.connections: set[Any] = set()
        self._connections_lock = threading.Lock()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self.connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._connections_lock:
                self.connections.discard(request)

    def server_close(self) -> None:
        """Also end the keep-alive connections still open: each holds a handler thread (and through it the
        store) waiting for a next request that will never come."""
        super().server_close()
        with self._connections_lock:
            open_now = list(self.connections)
        for connection in open_now:
            with contextlib.suppress(OSError):  # already gone
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up (timeouts, dropped watches) is normal; anything else is kept as a failure."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionResetError, BrokenPipeError, TimeoutError)):
            return
        self.state.failures.append(traceback.format_exc())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a watch's events are separate writes: Nagle + delayed ACK = 40 ms each
    server_version = "longshore-kube-emulator"
    timeout = 120
    server: EmulatorHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr access log
        return

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # ---------------------------------------------------------------- plumbing

    @property
    def state(self) -> ServerState:
        return self.server.state

    def _serve(self, method: str) -> None:
        request: Request | None = None
        try:
            body = self._read_body()
            self._authenticate()
            request = parse_request(method, self.path)
            effect = self.state.faults.fire(request.route)
            if effect.latency:
                time.sleep(effect.latency)
            if effect.status is not None:
                reason = "TooManyRequests" if effect.status == 429 else "InternalError"
                raise ApiError(
                    effect.status,
                    reason,
                    effect.message,
                    retry_after=effect.retry_after if effect.status == 429 else None,
                )
            self.state.store.process_due()
            if request.verb == "watch":
                self._watch(method, request, effect.drop_after)
                return
            status, payload = self._dispatch(request, body)
            accept = self.headers.get("Accept") or ""
            if request.rt is not None and request.verb in ("get", "list") and tables.wants_table(accept):
                include = request.query.get("includeObject") or "Metadata"
                payload = tables.as_table(request.rt, payload, self.state.store.clock.now(), include)
            self._record(method, request, status)
            self._send_json(status, payload)
        except ApiError as exc:
            self._record(method, request, exc.code)
            self._send_json(exc.code, exc.status(), retry_after=exc.retry_after)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # an emulator bug must come back as a 500, not kill the thread
            self.state.failures.append(traceback.format_exc())
            self._record(method, request, 500)
            self._send_json(
                500, errors.internal("unexpected emulator error (see emulator failures)").status()
            )

    def _record(self, method: str, request: Request | None, status: int) -> None:
        """Log the request before answering it, so a caller that got the answer also sees the record."""
        resource = request.route.resource if request else ""
        verb = request.verb if request else ""
        self.state.requests.append(RequestRecord(method, self.path, verb, resource, status))

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError:
            if "apply-patch+yaml" in (self.headers.get("Content-Type") or ""):
                return patching.load_apply_yaml(raw)
            raise errors.bad_request(f"the request body is not valid JSON: {raw[:80]!r}") from None

    def _authenticate(self) -> None:
        check = self.state.token_check
        if check is None:
            return
        header = self.headers.get("Authorization") or ""
        if not header.startswith("Bearer ") or not check(header[len("Bearer ") :].strip()):
            raise errors.unauthorized()

    def _send_json(self, status: int, payload: Any, retry_after: int | None = None) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        gzipped = len(data) >= GZIP_THRESHOLD and "gzip" in (self.headers.get("Accept-Encoding") or "")
        if gzipped:
            data = gzip.compress(data, compresslevel=GZIP_LEVEL)
        self.state.bytes_sent += len(data)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if gzipped:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            if retry_after is not None:
                self.send_header("Retry-After", str(retry_after))
            self._headers_buffer += (b"\r\n", data)  # type: ignore[attr-defined]  # `end_headers` + body, one write
            self.flush_headers()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # ---------------------------------------------------------------- verbs

    def _dispatch(self, request: Request, body: Any) -> tuple[int, Any]:
        if request.rt is None:
            return 200, self._discovery(request.discovery_path)
        rt, store, q = request.rt, self.state.store, request.query
        if request.subresource in ("eviction", "binding", "scale"):
            return subresources.answer(
                self.state.store, request, body, self.headers.get("Content-Type") or ""
            )
        subresource = request.subresource or None
        if rt.plural == "poddisruptionbudgets" and request.verb in ("get", "list"):
            disruption.refresh(store, request.namespace or None)
        if request.verb == "get":
            return 200, store.get(rt.plural, request.name, request.namespace or None)
        if request.verb == "list":
            return 200, self._list(request)
        if request.verb == "create":
            return 201, store.create(rt.plural, request_object(body), request.namespace or None)
        if request.verb == "update":
            obj = request_object(body)
            if name_of(obj) != request.name:
                raise errors.bad_request(
                    f"the name of the object ({name_of(obj)}) does not match the name on the URL ({request.name})"
                )
            if rt.namespaced and metadata(obj).get("namespace") not in (None, "", request.namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            return 200, store.update(rt.plural, obj, request.namespace or None, subresource=subresource)
        if request.verb == "patch":
            content_type = self.headers.get("Content-Type") or ""
            if content_type.startswith(patching.APPLY_PATCH) and not subresource:
                created = self._create_applied(request, body)
                if created is not None:
                    return 201, created
            return 200, store.patch(
                rt.plural,
                request.name,
                body,
                request.namespace or None,
                content_type=content_type,
                subresource=subresource,
            )
        if request.verb == "delete":
            options = body if isinstance(body, dict) else {}
            grace = options.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
            policy = options.get("propagationPolicy") or q.get("propagationPolicy")
            if policy is None and (options.get("orphanDependents") or truthy(q.get("orphanDependents"))):
                policy = "Orphan"
            result = store.delete(
                rt.plural,
                request.name,
                request.namespace or None,
                grace_period_seconds=None if grace in (None, "") else int(grace),
                propagation_policy=policy,
                preconditions=options.get("preconditions"),
            )
            if rt.plural == "pods" or metadata(result).get("deletionTimestamp"):
                return 200, result
            return 200, success_status(rt, request.name, metadata(result).get("uid"))
        if request.verb == "deletecollection":
            labels = parse_label_selector(q.get("labelSelector"))
            fields = parse_field_selector(q.get("fieldSelector"), rt.field_selectors)
            for obj in store.list(rt.plural, request.namespace or None, labels, fields):
                store.delete(rt.plural, name_of(obj), request.namespace or metadata(obj).get("namespace"))
            return 200, success_status(rt, "", None)
        raise errors.method_not_allowed(request.verb, rt.plural)

    def _create_applied(self, request: Request, body: Any) -> JSON | None:
        """Server-side apply of an object that does not exist yet creates it; None when it exists."""
        assert request.rt is not None
        try:
            self.state.store.get(request.rt.plural, request.name, request.namespace or None)
            return None
        except ApiError as error:
            if error.code != 404:
                raise
        obj = request_object(body)
        if name_of(obj) != request.name:
            raise errors.bad_request(
                f"the name of the object ({name_of(obj)}) does not match the name on the URL ({request.name})"
            )
        return self.state.store.create(request.rt.plural, obj, request.namespace or None)

    def _discovery(self, path: str) -> Any:
        parts = [p for p in path.split("/") if p]
        if parts == ["version"]:
            return discovery.version_info(self.state.kubernetes_version)
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return "ok"
        if parts == ["api"]:
            return discovery.core_versions()
        if parts == ["openapi", "v3"]:
            return openapi.index()
        if parts[:2] == ["openapi", "v3"]:
            found = openapi.document("/".join(parts[2:]))
            if found is None:
                raise errors.route_not_found()
            return found
        if parts == ["apis"]:
            return discovery.group_list()
        if parts[:1] == ["apis"] and len(parts) == 2:
            document = discovery.group(parts[1])
        elif parts[:1] == ["api"] and len(parts) == 2:
            document = discovery.resource_list("", parts[1])
        elif parts[:1] == ["apis"] and len(parts) == 3:
            document = discovery.resource_list(parts[1], parts[2])
        else:
            document = None
        if document is None:
            raise errors.route_not_found()
        return document

    def _list(self, request: Request) -> JSON:
        assert request.rt is not None
        rt, q = request.rt, request.query
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"), rt.field_selectors)
        limit = int(q["limit"]) if q.get("limit") else None
        page = self.state.store.list_page(
            rt.plural,
            request.namespace or None,
            labels,
            fields,
            limit=limit,
            continue_token=q.get("continue") or None,
        )
        list_meta: JSON = {"resourceVersion": str(page.resource_version)}
        if page.continue_token:
            list_meta["continue"] = page.continue_token
            list_meta["remainingItemCount"] = page.remaining
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": list_meta,
            "items": page.items,
        }

    def _watch(self, method: str, request: Request, drop_after: int | None) -> None:
        assert request.rt is not None
        rt, q, store = request.rt, request.query, self.state.store
        flt = WatchFilter(
            rt.plural,
            request.namespace or None,
            parse_label_selector(q.get("labelSelector")),
            parse_field_selector(q.get("fieldSelector"), rt.field_selectors),
        )
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else DEFAULT_WATCH_TIMEOUT
        wall_deadline = time.monotonic() + timeout
        virtual_deadline = store.clock.now() + timeout
        start = check_resource_version(q.get("resourceVersion"))
        # `kubectl get -w` asks for Tables: each event then carries a one-row Table, as the API server sends
        table = tables.wants_table(self.headers.get("Accept") or "")
        include = q.get("includeObject") or "Metadata"
        self._record(method, request, 200)
        if rt.plural == "poddisruptionbudgets":
            disruption.refresh(store, request.namespace or None)
        pending: list[tuple[str, JSON]] = []
        with store.locked():
            if start is None:
                cursor = store.resource_version
                pending = [
                    ("ADDED", o)
                    for o in store.list(rt.plural, request.namespace or None, flt.labels, flt.fields)
                ]
            elif start > store.resource_version:  # another server's version (the API server answers the same)
                raise ApiError(
                    504, "Timeout", f"Too large resource version: {start}, current: {store.resource_version}"
                )
            else:
                cursor = start
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        try:
            while True:
                for event_type, obj in pending:
                    if drop_after is not None and sent >= drop_after:
                        self.close_connection = True
                        return
                    if table:
                        obj = tables.as_table(rt, obj, store.clock.now(), include)
                    self._chunk({"type": event_type, "object": obj})
                    sent += 1
                pending = []
                if drop_after is not None and sent >= drop_after:
                    self.close_connection = True
                    return
                if (
                    self.state.stopping.is_set()
                    or time.monotonic() >= wall_deadline
                    or store.clock.now() >= virtual_deadline
                ):
                    break
                try:
                    with store.log.condition:
                        changes = store.log.since(cursor)
                        if not changes:
                            store.log.wait(min(_WAKE_INTERVAL, max(wall_deadline - time.monotonic(), 0.0)))
                            changes = store.log.since(cursor)
                except ApiError as exc:
                    self._chunk({"type": "ERROR", "object": exc.status()})
                    break
                for change in changes:
                    cursor = change.resource_version
                    event = flt.translate(change)
                    if event is not None:
                        pending.append(event)
                if rt.plural == "poddisruptionbudgets" and any(c.plural == "pods" for c in changes):
                    disruption.refresh(store, request.namespace or None)
                store.process_due()
            if truthy(q.get("allowWatchBookmarks")):
                self._chunk(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": rt.kind,
                            "apiVersion": rt.api_version,
                            "metadata": {"resourceVersion": str(cursor)},
                        },
                    }
                )
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, event: JSON) -> None:
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.state.bytes_sent += len(data)
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
