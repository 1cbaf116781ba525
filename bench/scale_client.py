"""One Lambda container of the scale benchmark, in its own process: reads the cluster as a pass does.

Usage: `python -m bench.scale_client URL MODE`, then one command a line on stdin: `provisioner` or `planner`
runs that pass's read of the cluster and prints one JSON line (CPU seconds, wall seconds, peak RSS in MiB,
pods and nodes seen); `sync` catches the watch cache up (between batches); `fleet` runs the provisioner's pass
for a new batch and prints the latency of each pod to its claim's CreateFleet call (`bench.scale_fleet`,
`compact` only); `quit` ends. MODE `today` reads as main did before this benchmark (whole objects, no
gzip, no watch cache, the planner parsing every pod every pass); `compact` reads through the adapter as
shipped (compact pages, gzip, the list-then-watch cache, parsed pods memoised per container).

What a pass reads is what `services.provisioner` and `services.disruption` read before they decide: nodes
then pods, the provisionable pods, the bound pods, the existing nodes with their pods.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from kubernetes import client as k8s

from longshore.adapters.kube.cluster import PAGE_SIZE, KubeCluster, _json, new_cache
from longshore.core.model import ClusterConfig
from longshore.services import snapshot

CONFIG = ClusterConfig("bench", "us-east-1", "1.31", node_pools=(), node_classes=())


class TodayCluster(KubeCluster):
    """Lists as main did before: whole objects, every page kept, no compression asked."""

    def _whole(self, what: str, fn: Any, **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page_args = {k: v for k, v in kwargs.items() if v is not None}
            if token:
                page_args["_continue"] = token
            body = _json(self._call(what, fn, limit=PAGE_SIZE, _preload_content=False, **page_args))
            items.extend(body.get("items") or [])
            token = (body.get("metadata") or {}).get("continue") or None
            if not token:
                return items

    def list_pods(self, *, node_name: str | None = None, label_selector: str | None = None) -> list[Any]:
        return self._whole("list pods", self._core.list_pod_for_all_namespaces)

    def list_nodes(self, *, label_selector: str | None = None) -> list[Any]:
        return self._whole("list nodes", self._core.list_node)


class TodayPodCache(snapshot.PodCache):
    """The provisioner's memo as main had it: by (uid, resourceVersion), for one invocation."""

    def parse(self, manifest: Any) -> Any:
        meta = manifest.get("metadata") or {}
        key = (snapshot.pod_uid(manifest), str(meta.get("resourceVersion") or ""))
        found = self._pods.get(key)
        if found is None:
            found = self._pods[key] = snapshot.parse_pod(manifest)
        return found

    def retain(self, manifests: Any) -> None:
        keep = {
            (snapshot.pod_uid(m), str((m.get("metadata") or {}).get("resourceVersion") or ""))
            for m in manifests
        }
        self._pods = {k: v for k, v in self._pods.items() if k in keep}


def read_pass(cluster: KubeCluster, cache: snapshot.PodCache | None) -> dict[str, Any]:
    cpu, wall = time.process_time(), time.perf_counter()
    nodes = cluster.list_nodes()
    pods = cluster.list_pods()
    if cache is not None:
        cache.retain(pods)
    pending, _ = snapshot.pending_pods(pods, cache)
    bound, _ = snapshot.bound_pods(pods, cache)
    existing, _ = snapshot.existing_nodes(nodes, bound, CONFIG)
    return {
        "cpu_s": round(time.process_time() - cpu, 3),
        "wall_s": round(time.perf_counter() - wall, 3),
        "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pods": len(pods),
        "pending": len(pending),
        "nodes": len(existing),
    }


def main(url: str, mode: str) -> None:
    configuration = k8s.Configuration()
    configuration.host = url
    api = k8s.ApiClient(configuration)
    cache = new_cache()
    cluster = TodayCluster(api) if mode == "today" else KubeCluster(api, cache=cache)
    fleet: Any = None  # bench.scale_fleet.FleetBench, imported when asked (`--before` runs another product)
    provisioner_cache = TodayPodCache() if mode == "today" else snapshot.PodCache()  # one invocation
    print(
        json.dumps({"rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}),
        flush=True,
    )
    for line in sys.stdin:
        command = line.strip()
        if command == "provisioner":
            print(json.dumps(read_pass(cluster, provisioner_cache)), flush=True)
        elif command == "planner":
            print(
                json.dumps(read_pass(cluster, None if mode == "today" else snapshot.PodCache())), flush=True
            )
        elif command == "sync":
            print(
                json.dumps({"nodes": len(cluster.list_nodes()), "pods": len(cluster.list_pods())}), flush=True
            )
        elif command == "fleet":
            if fleet is None:
                from bench.scale_fleet import FleetBench

                fleet = FleetBench(api, cache)
            print(json.dumps(fleet.batch()), flush=True)
        elif command == "quit":
            return


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
