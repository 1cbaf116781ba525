"""A read-only Kubernetes API for the scale benchmark that holds no object: each is generated from its index.

Theory of operation: the cluster is `nodes` nodes and `pods` pods bound 30 to a node, all made by
`bench.scale_objects` from their index when a page is served, so serving 150,000 pods of about 10 KB of JSON
needs memory for one page, not 1.5 GB of objects (the emulator, `longshore_sim.kubeapi`, holds every object
and would need about 8 GB). What changes after the start (`add`, `touch`, `drop`) is kept as whole objects with
their resourceVersion in a change log, as the API server's watch cache keeps its history.

What the functions rely on, kept as the API server does it:
- resourceVersions: node j has `1 + j`, pod i has `1 + nodes + i`; every change takes the next version. A
  list answers the version current when its first page was served (carried in the continue token).
- `limit`/`continue` pages in a stable order; `Accept-Encoding: gzip` compresses answers of 128 KiB or more
  at level 1 (as `longshore_sim.kubeapi.server` does), and `bytes_sent` counts what went over the wire.
- `watch=true&resourceVersion=V` replays every change after V as ADDED or MODIFIED, then streams new changes
  until `timeoutSeconds`, then a BOOKMARK if asked; a V newer than the current version is 504 "Too large
  resource version", as the API server answers.
- A page served after a change shows the changed object; the watch from the list's version then replays the
  change, which a client applies again to the same result (the API server serves a consistent snapshot
  instead; both end in the same state).

- `fieldSelector=spec.nodeName=` (the provisioner's pending pods) and `spec.nodeName=NODE` are answered by
  index, without generating the cluster's bound pods.

Served: `GET /api/v1/pods` and `GET /api/v1/nodes` (the reads), and for the provisioner pass of
`bench.scale_fleet`, `GET /apis/apps/v1/daemonsets` (none) and `POST .../events` (accepted, not kept).
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.scale_objects import node, pod

GZIP_THRESHOLD = 128 * 1024
GZIP_LEVEL = 1


def node_name(j: int) -> str:
    return f"ip-10-{j // 250 % 250}-{j % 250}-1.ec2.internal"


@dataclass
class VirtualCluster:
    """`pods` bound pods, `per_node` to a node, generated on demand; later changes kept whole."""

    pods: int
    per_node: int = 30
    changed: dict[tuple[str, int], tuple[int, dict[str, Any]]] = field(default_factory=dict)
    log: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    added: int = 0
    deleted: set[int] = field(default_factory=set)  # pod indices
    bytes_sent: int = 0
    refused: list[str] = field(default_factory=list)  # requests this server does not serve
    condition: threading.Condition = field(default_factory=threading.Condition)

    @property
    def nodes(self) -> int:
        return -(-self.pods // self.per_node)

    @property
    def version(self) -> int:
        return self.log[-1][0] if self.log else self.nodes + self.pods

    def count(self, plural: str) -> int:
        return self.nodes if plural == "nodes" else self.pods + self.added

    def item(self, plural: str, index: int) -> dict[str, Any]:
        found = self.changed.get((plural, index))
        if found is not None:
            return found[1]
        if plural == "nodes":
            obj, version = node(index), 1 + index
        else:
            obj, version = pod(index, node_name(index // self.per_node)), 1 + self.nodes + index
        obj["metadata"]["uid"] = f"{plural}-{index:012d}"
        obj["metadata"]["resourceVersion"] = str(version)
        return obj

    def _record(self, plural: str, index: int, kind: str, obj: dict[str, Any]) -> None:
        with self.condition:
            version = self.version + 1
            obj["metadata"]["uid"] = f"{plural}-{index:012d}"
            obj["metadata"]["resourceVersion"] = str(version)
            self.changed[(plural, index)] = (version, obj)
            self.log.append((version, kind, plural, obj))
            self.condition.notify_all()

    def add(self, n: int) -> None:
        """`n` new pods, pending and unschedulable."""
        for index in range(self.pods + self.added, self.pods + self.added + n):
            self._record("pods", index, "ADDED", pod(index, None))
        self.added += n

    def touch(self, n: int, value: str) -> None:
        """The first `n` pods get the label `touched=value` (the churn of a live cluster)."""
        for index in range(n):
            obj = json.loads(json.dumps(self.item("pods", index)))  # the logged object stays as it was
            obj["metadata"]["labels"] = {**obj["metadata"]["labels"], "touched": value}
            self._record("pods", index, "MODIFIED", obj)

    def drop(self) -> int:
        """Delete every added pod still there (a DELETED event each); returns how many."""
        gone = [i for i in range(self.pods, self.pods + self.added) if i not in self.deleted]
        for index in gone:
            obj = json.loads(json.dumps(self.item("pods", index)))
            self._record("pods", index, "DELETED", obj)
            self.deleted.add(index)
        return len(gone)

    def indices(self, plural: str, field_selector: str | None) -> list[int] | range:
        """The indices a list serves, in order (pods: those on a node, or unbound, by `spec.nodeName`)."""
        if plural == "nodes" or not field_selector:
            return range(self.count(plural))
        key, _, value = field_selector.partition("=")
        if key != "spec.nodeName":
            raise ValueError(f"field selector {field_selector!r} is not served")
        if value:
            found = self._node_index().get(value)
            span = range(0) if found is None else range(found * self.per_node, (found + 1) * self.per_node)
            candidates = [i for i in span if i < self.pods]
        else:
            candidates = list(range(self.pods, self.pods + self.added))
        on = [i for i in candidates if i not in self.deleted]
        return [i for i in on if ((self.item("pods", i).get("spec") or {}).get("nodeName") or "") == value]

    def _node_index(self) -> dict[str, int]:
        return {node_name(j): j for j in range(self.nodes)}

    def since(self, plural: str, version: int) -> list[tuple[int, str, dict[str, Any]]]:
        return [(v, kind, obj) for v, kind, p, obj in self.log if v > version and p == plural]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        plural = url.path.rstrip("/").rsplit("/", 1)[-1]
        if url.path == "/apis/apps/v1/daemonsets":
            self._send(200, {"kind": "DaemonSetList", "apiVersion": "apps/v1", "metadata": {}, "items": []})
            return
        if url.path not in ("/api/v1/pods", "/api/v1/nodes"):
            self.server.cluster.refused.append(f"GET {url.path}")
            self._send(404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"})
            return
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if query.get("watch") in ("true", "True", "1"):
            self._watch(plural, query)
        else:
            self._list(plural, query)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if url.path.startswith("/api/v1/namespaces/") and url.path.endswith("/events"):
            self._send(201, body)  # accepted, not kept
            return
        self.server.cluster.refused.append(f"POST {url.path}")
        self._send(404, {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound"})

    def _list(self, plural: str, query: dict[str, str]) -> None:
        cluster = self.server.cluster
        try:
            indices = cluster.indices(plural, query.get("fieldSelector"))
        except ValueError as error:
            self._send(400, {"kind": "Status", "status": "Failure", "code": 400, "message": str(error)})
            return
        limit = int(query.get("limit") or 0) or len(indices)
        version, _, start = (query.get("continue") or "").partition(":")
        version = version or str(cluster.version)
        offset = int(start or 0)
        end = min(offset + limit, len(indices))
        meta: dict[str, Any] = {"resourceVersion": version}
        if end < len(indices):
            meta["continue"] = f"{version}:{end}"
            meta["remainingItemCount"] = len(indices) - end
        items = [
            cluster.item(plural, i)
            for i in indices[offset:end]
            if i not in cluster.deleted or plural == "nodes"
        ]
        self._send(
            200,
            {
                "kind": "PodList" if plural == "pods" else "NodeList",
                "apiVersion": "v1",
                "metadata": meta,
                "items": items,
            },
        )

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        gzipped = len(data) >= GZIP_THRESHOLD and "gzip" in (self.headers.get("Accept-Encoding") or "")
        if gzipped:
            data = gzip.compress(data, compresslevel=GZIP_LEVEL)
        self.server.cluster.bytes_sent += len(data)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _watch(self, plural: str, query: dict[str, str]) -> None:
        cluster = self.server.cluster
        cursor = int(query.get("resourceVersion") or cluster.version)
        if cursor > cluster.version:
            message = f"Too large resource version: {cursor}, current: {cluster.version}"
            self._send(504, {"kind": "Status", "status": "Failure", "code": 504, "message": message})
            return
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 60)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while time.monotonic() < deadline:
                with cluster.condition:
                    changes = cluster.since(plural, cursor)
                    if not changes:
                        cluster.condition.wait(min(0.2, max(deadline - time.monotonic(), 0.0)))
                        continue
                for version, kind, obj in changes:
                    self._chunk({"type": kind, "object": obj})
                    cursor = version
            if query.get("allowWatchBookmarks") in ("true", "True", "1"):
                kind = "Pod" if plural == "pods" else "Node"
                bookmark = {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(cursor)}}
                self._chunk({"type": "BOOKMARK", "object": bookmark})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, event: dict[str, Any]) -> None:
        data = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.server.cluster.bytes_sent += len(data)
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, cluster: VirtualCluster) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cluster = cluster

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that went away is not an error
            super().handle_error(request, client_address)


def serve_in_background(cluster: VirtualCluster) -> tuple[str, ThreadingHTTPServer]:
    """Starts serving `cluster` on a loopback port; returns its URL and the server (`shutdown()` stops it)."""
    server = _Server(cluster)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server
