"""`ports.kube.Cluster` and `PodWatch` on the `kubernetes` Python client (36.0.3).

Theory of operation: built from a configured `kubernetes.client.ApiClient` (production: `adapters.aws.eks`;
tests and the simulation: the loopback API emulator). Reads ask for the raw response (`_preload_content=False`)
and parse the JSON themselves, so objects come back exactly as the API server sent them (the dict shape the
port promises) without building client models; list calls follow `metadata.continue` pages, ask for gzip
(`Accept-Encoding`; urllib3 inflates it) and trim each page to the fields Longshore reads (`decode`) as soon as
it is parsed, so a list never holds more than one page of full objects. With a `cache` (`informer`), unfiltered
pod and node lists are served from a list-then-watch cache; filtered reads always go to the server. Writes send
plain dict bodies (a dict `patch_node` body is a strategic-merge patch; `spec.taints` has no merge key, so
the list is replaced, which is what `NodePatch.taints` means). Every call goes through `call_with_retries`
(5xx, throttling 429, timeouts); an eviction refused by a PodDisruptionBudget is an answer, not a failure.

Events: an Event's name is derived from its object, reason and message up to numbers (`event_name`), so the
same Event posted again, by this container or a cold one, is an AlreadyExists that becomes a `count` increment
on the Event already there (as client-go's event correlator aggregates), not a second Event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from longshore.adapters.kube.decode import compact_node, compact_pod
from longshore.adapters.kube.informer import ClusterCache, Lister, WatchedList, Watcher, read_together
from longshore.adapters.kube.retry import (
    CallBudget,
    RetryPolicy,
    call_with_retries,
    is_pdb_refusal,
    is_transient,
    status_body,
)
from longshore.bulk import gc_paused
from longshore.core import labels as wk
from longshore.ports.kube import EvictionResult, KubeEvent, Manifest, NodePatch, event_name

PAGE_SIZE: Final = 500
REQUEST_TIMEOUT: Final = (5.0, 30.0)  # connect, read (seconds)
_FINISHED_PHASES: Final = frozenset({"Succeeded", "Failed"})
GZIP: Final = {"Accept-Encoding": "gzip"}
"""Asked on list calls: list answers compress about tenfold, and the API server only compresses when asked."""


def _rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(response: Any) -> Manifest:
    data = response.data
    parsed = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    if not isinstance(parsed, dict):
        raise ValueError(f"the API server answered {type(parsed).__name__}, expected an object")
    return parsed


class KubeCluster:
    """The cluster through the Kubernetes API (see the module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        component: str = "longshore",
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], float] = time.time,
        event_namespace: str = "default",
        cache: ClusterCache | None = None,
        budget: CallBudget | None = None,
    ) -> None:
        """`cache`: serve unfiltered `list_pods()` and `list_nodes()` from a list-then-watch cache kept
        current from the last resourceVersion (`informer`); None lists every time. `budget`: the invocation's
        time for Kubernetes calls (`retry.CallBudget`), which cuts timeouts and retries near its end."""
        self._core = k8s.CoreV1Api(api_client)
        self._apps = k8s.AppsV1Api(api_client)
        self._policy = k8s.PolicyV1Api(api_client)
        self._storage = k8s.StorageV1Api(api_client)
        self._custom = k8s.CustomObjectsApi(api_client)
        self._component = component
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._now = now
        self._event_namespace = event_namespace
        self._cache = cache
        self._budget = budget

    # -- plumbing ---------------------------------------------------------------------------------------

    def _timeout(self, timeout: tuple[float, float]) -> tuple[float, float]:
        return self._budget.timeout(timeout) if self._budget is not None else timeout

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        timeout = kwargs.pop("_request_timeout", REQUEST_TIMEOUT)

        def attempt() -> Any:
            return fn(*args, _request_timeout=self._timeout(timeout), **kwargs)

        return call_with_retries(attempt, self._retry, self._sleep, what, budget=self._budget)

    def _list(
        self,
        what: str,
        fn: Callable[..., Any],
        compact: Callable[[Manifest], Manifest] | None = None,
        **kwargs: Any,
    ) -> list[Manifest]:
        return self._list_versioned(what, fn, compact, **kwargs)[0]

    def _list_versioned(
        self,
        what: str,
        fn: Callable[..., Any],
        compact: Callable[[Manifest], Manifest] | None = None,
        **kwargs: Any,
    ) -> tuple[list[Manifest], str]:
        """Every page's items (compacted as each page is parsed) and the list's resourceVersion."""
        with gc_paused():
            return self._pages(what, fn, compact, **kwargs)

    def _pages(
        self, what: str, fn: Callable[..., Any], compact: Callable[[Manifest], Manifest] | None, **kwargs: Any
    ) -> tuple[list[Manifest], str]:
        items: list[Manifest] = []
        token: str | None = None
        while True:
            page_args = {k: v for k, v in kwargs.items() if v is not None}
            if token:
                page_args["_continue"] = token
            response = self._call(
                what, fn, limit=PAGE_SIZE, _preload_content=False, _headers=GZIP, **page_args
            )
            body = _json(response)
            page = body.get("items") or []
            items.extend(page if compact is None else (compact(item) for item in page))
            list_meta = body.get("metadata") or {}
            token = list_meta.get("continue") or None
            del body, page, response  # only the compact objects outlive the page
            if not token:
                return items, str(list_meta.get("resourceVersion") or "")

    def _absent_is_none(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return self._call(what, fn, *args, **kwargs)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    # -- reads --------------------------------------------------------------------------------------------

    def _cached(self, kind: WatchedList, what: str, fn: Callable[..., Any]) -> list[Manifest]:
        return kind.read(*self._sources(kind, what, fn))

    def _sources(self, kind: WatchedList, what: str, fn: Callable[..., Any]) -> tuple[Lister, Watcher]:
        def lister() -> tuple[list[Manifest], str]:
            return self._list_versioned(what, fn, kind.compact)

        def watcher(version: str, quiet_s: float, max_s: float) -> Any:
            return fn(  # not retried: a watch that cannot open ends in a relist, which is retried
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=max(1, int(max_s)),
                _preload_content=False,
                _request_timeout=self._timeout((REQUEST_TIMEOUT[0], quiet_s)),
            )

        return lister, watcher

    def list_pods(self, *, node_name: str | None = None, label_selector: str | None = None) -> list[Manifest]:
        if self._cache is not None and node_name is None and label_selector is None:
            return self._cached(self._cache.pods, "list pods", self._core.list_pod_for_all_namespaces)
        selector = f"spec.nodeName={node_name}" if node_name else None
        pods = self._list(
            "list pods",
            self._core.list_pod_for_all_namespaces,
            compact_pod,
            field_selector=selector,
            label_selector=label_selector,
        )
        if node_name:  # servers that ignore the field selector must not widen a drain
            pods = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node_name]
        return pods

    def list_pending_pods(self) -> list[Manifest]:
        pods = self._list(
            "list pending pods",
            self._core.list_pod_for_all_namespaces,
            compact_pod,
            field_selector="spec.nodeName=",
        )
        return [
            p
            for p in pods
            if not (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase") not in _FINISHED_PHASES
        ]

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]:
        if self._cache is not None and label_selector is None:
            return self._cached(self._cache.nodes, "list nodes", self._core.list_node)
        return self._list("list nodes", self._core.list_node, compact_node, label_selector=label_selector)

    def list_nodes_and_pods(self) -> tuple[list[Manifest], list[Manifest]]:
        if self._cache is None:
            return self.list_nodes(), self.list_pods()
        core = self._core
        return read_together(
            self._cache.nodes,
            self._sources(self._cache.nodes, "list nodes", core.list_node),
            self._cache.pods,
            self._sources(self._cache.pods, "list pods", core.list_pod_for_all_namespaces),
        )

    def get_node(self, name: str) -> Manifest | None:
        response = self._absent_is_none(
            f"read node {name}", self._core.read_node, name, _preload_content=False
        )
        return None if response is None else _json(response)

    def list_daemonsets(self) -> list[Manifest]:
        return self._list("list daemonsets", self._apps.list_daemon_set_for_all_namespaces)

    def list_pdbs(self) -> list[Manifest]:
        return self._list(
            "list PodDisruptionBudgets", self._policy.list_pod_disruption_budget_for_all_namespaces
        )

    # -- volume topology (`ports.kube.VolumeSource`) ------------------------------------------------------

    def list_persistent_volume_claims(self) -> list[Manifest]:
        return self._list(
            "list PersistentVolumeClaims", self._core.list_persistent_volume_claim_for_all_namespaces
        )

    def list_persistent_volumes(self) -> list[Manifest]:
        return self._list("list PersistentVolumes", self._core.list_persistent_volume)

    def list_storage_classes(self) -> list[Manifest]:
        return self._list("list StorageClasses", self._storage.list_storage_class)

    # -- CapacityBuffers (`services.buffer_pods.BufferSource`) ---------------------------------------------

    def list_buffers(self) -> list[Manifest]:
        """Every CapacityBuffer; none when the CRD is not installed (404)."""
        group, version, plural = BUFFER_ROUTE
        response = self._absent_is_none(
            "list capacitybuffers",
            self._custom.list_cluster_custom_object,
            group,
            version,
            plural,
            _preload_content=False,
        )
        return [] if response is None else list(_json(response).get("items") or [])

    def write_buffer_status(self, namespace: str, name: str, status: Manifest) -> None:
        """Replace a CapacityBuffer's `status` (a JSON merge patch on the status subresource); gone is ignored."""
        group, version, plural = BUFFER_ROUTE
        self._absent_is_none(
            f"patch capacitybuffers/{namespace}/{name}/status",
            self._custom.patch_namespaced_custom_object_status,
            group,
            version,
            namespace,
            plural,
            name,
            {"status": dict(status)},
            _content_type="application/merge-patch+json",
        )

    def pod_templates(self) -> dict[tuple[str, str], Manifest]:
        items = self._list("list podtemplates", self._core.list_pod_template_for_all_namespaces)
        return {(_namespace(o), _name(o)): o for o in items}

    def workloads(self) -> dict[tuple[str, str, str], Manifest]:
        found: dict[tuple[str, str, str], Manifest] = {}
        for kind, fn in (
            ("Deployment", self._apps.list_deployment_for_all_namespaces),
            ("ReplicaSet", self._apps.list_replica_set_for_all_namespaces),
            ("StatefulSet", self._apps.list_stateful_set_for_all_namespaces),
        ):
            for o in self._list(f"list {kind.lower()}s", fn):
                found[(kind, _namespace(o), _name(o))] = o
        return found

    # -- writes -------------------------------------------------------------------------------------------

    def patch_node(self, name: str, patch: NodePatch) -> Manifest | None:
        metadata: dict[str, Any] = {}
        if patch.labels:
            metadata["labels"] = dict(patch.labels)
        if patch.annotations:
            metadata["annotations"] = dict(patch.annotations)
        if patch.add_finalizers:
            metadata["finalizers"] = list(patch.add_finalizers)
        if patch.remove_finalizers:
            metadata["$deleteFromPrimitiveList/finalizers"] = list(patch.remove_finalizers)
        spec: dict[str, Any] = {}
        if patch.taints is not None:
            spec["taints"] = [
                {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
                for t in patch.taints
            ]
        if patch.unschedulable is not None:
            spec["unschedulable"] = patch.unschedulable
        body: dict[str, Any] = {}
        if metadata:
            body["metadata"] = metadata
        if spec:
            body["spec"] = spec
        response = self._absent_is_none(
            f"patch node {name}", self._core.patch_node, name, body, _preload_content=False
        )
        return None if response is None else _json(response)

    def evict_pod(self, namespace: str, name: str, *, uid: str | None = None) -> EvictionResult:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}

        def evict() -> Any:
            return self._core.create_namespaced_pod_eviction(
                name, namespace, body, _preload_content=False, _request_timeout=self._timeout(REQUEST_TIMEOUT)
            )

        def transient(error: BaseException) -> bool:
            return is_transient(error) and not is_pdb_refusal(error)

        try:
            call_with_retries(
                evict, self._retry, self._sleep, f"evict pod {namespace}/{name}", transient, self._budget
            )
        except ApiException as error:
            message = str(status_body(error).get("message") or error.reason or "")
            if is_pdb_refusal(error):
                return EvictionResult("blocked", message)
            if error.status in (404, 409):  # gone, or replaced by a pod with another UID
                return EvictionResult("not-found", message)
            raise
        return EvictionResult("evicted")

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> bool:
        response = self._absent_is_none(
            f"delete pod {namespace}/{name}",
            self._core.delete_namespaced_pod,
            name,
            namespace,
            grace_period_seconds=grace_period_seconds,
            _preload_content=False,
        )
        return response is not None

    def delete_node(self, name: str) -> bool:
        response = self._absent_is_none(
            f"delete node {name}", self._core.delete_node, name, _preload_content=False
        )
        if response is not None:
            self.patch_node(name, NodePatch(remove_finalizers=(wk.TERMINATION_FINALIZER,)))
        return response is not None

    def post_event(self, event: KubeEvent) -> None:
        """Create the Event, or count a repeat on the one already there (module docstring: Events)."""
        stamp = _rfc3339(self._now())
        involved = event.involved
        namespace = involved.namespace or self._event_namespace
        name = event_name(event)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": involved.api_version,
                "kind": involved.kind,
                "name": involved.name,
                **({"namespace": involved.namespace} if involved.namespace else {}),
                **({"uid": involved.uid} if involved.uid else {}),
            },
            "reason": event.reason,
            "message": event.message[:1024],
            "type": event.type,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self._component},
            "reportingComponent": self._component,
        }
        try:
            self._call(
                f"post event {event.reason}",
                self._core.create_namespaced_event,
                namespace,
                body,
                _preload_content=False,
            )
            return
        except ApiException as error:
            if error.status != 409:
                raise
        existing = self._absent_is_none(
            f"read event {name}", self._core.read_namespaced_event, name, namespace, _preload_content=False
        )
        count = int((_json(existing) if existing is not None else {}).get("count") or 1) + 1
        patch = {"count": count, "lastTimestamp": stamp, "message": event.message[:1024]}
        self._call(
            f"count event {event.reason}",
            self._core.patch_namespaced_event,
            name,
            namespace,
            patch,
            _preload_content=False,
        )

    # -- watch --------------------------------------------------------------------------------------------

    def watch_pending_pods(self, *, timeout_seconds: int) -> Iterator[tuple[str, Manifest]]:
        """Stream unbound pods for `timeout_seconds` (server-side timeout); yields (event type, pod dict)."""
        watcher = k8s_watch.Watch()
        stream = watcher.stream(
            self._core.list_pod_for_all_namespaces,
            field_selector="spec.nodeName=",
            timeout_seconds=timeout_seconds,
            deserialize=False,  # plain dicts, no client models
            _request_timeout=self._timeout((REQUEST_TIMEOUT[0], timeout_seconds + REQUEST_TIMEOUT[1])),
        )
        try:
            for event in stream:
                raw = event.get("object")
                if isinstance(raw, dict) and event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    yield str(event["type"]), raw
        finally:
            watcher.stop()


def new_cache(*, quiet_s: float = 0.15, max_s: float = 5.0) -> ClusterCache:
    """An empty pod and node cache (see `informer`)."""
    return ClusterCache(
        pods=WatchedList(compact_pod, quiet_s=quiet_s, max_s=max_s),
        nodes=WatchedList(compact_node, quiet_s=quiet_s, max_s=max_s),
    )


BUFFER_ROUTE: Final = ("autoscaling.x-k8s.io", "v1alpha1", "capacitybuffers")


def _namespace(obj: Manifest) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _name(obj: Manifest) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
