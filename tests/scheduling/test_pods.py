"""`pod_from_manifest`: effective requests, constraints, and errors that name the field."""

from __future__ import annotations

import pytest

from longshore.core.pod_manifest import PodManifestError, pod_from_manifest
from tests.builders import pod_manifest


def test_requests_follow_the_kube_scheduler_with_init_containers_sidecars_and_overhead():
    manifest = pod_manifest("p", cpu="500m", memory="256Mi")
    manifest["spec"]["initContainers"] = [
        {
            "name": "sidecar",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        },
        {"name": "migrate", "resources": {"requests": {"cpu": "2", "memory": "128Mi"}}},
    ]
    manifest["spec"]["overhead"] = {"cpu": "10m"}
    pod = pod_from_manifest(manifest)
    # cpu: max(500 + 100, 2000 + 100) + 10; memory: max(256 + 64, 128 + 64) Mi
    assert pod.requests.get("cpu") == 2110
    assert pod.requests.get("memory") == 320 * 2**20


def test_pod_level_requests_replace_the_containers_sum_for_cpu_memory_and_hugepages():
    # component-helpers PodRequests: pod-level requests replace the aggregate; other resources, overhead kept
    manifest = pod_manifest("p", cpu="3", memory="1Gi", extra_requests={"nvidia.com/gpu": "1"})
    manifest["spec"]["resources"] = {"requests": {"cpu": "1", "memory": "2Gi", "hugepages-2Mi": "4Mi"}}
    manifest["spec"]["overhead"] = {"cpu": "10m"}
    pod = pod_from_manifest(manifest)
    assert pod.requests.get("cpu") == 1010  # 1 (pod level, below the containers' 3) + overhead
    assert pod.requests.get("memory") == 2 * 2**30
    assert pod.requests.get("hugepages-2Mi") == 4 * 2**20
    assert pod.requests.get("nvidia.com/gpu") == 1  # not a pod-level resource: the containers' sum


def test_pod_level_limits_stand_for_requests_only_where_no_container_requests():
    manifest = pod_manifest("p", cpu="500m", memory=None)
    manifest["spec"]["resources"] = {"limits": {"cpu": "2", "memory": "3Gi"}}
    pod = pod_from_manifest(manifest)
    assert pod.requests.get("cpu") == 500 and pod.requests.get("memory") == 3 * 2**30


def test_limits_without_requests_become_requests():
    manifest = pod_manifest("p", cpu=None, memory=None)
    manifest["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    assert pod_from_manifest(manifest).requests.get("cpu") == 1000


def test_constraints_are_parsed():
    manifest = pod_manifest(
        "p",
        node_selector={"disk": "ssd"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        spread=[
            {
                "maxSkew": 2,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "x"}},
            }
        ],
        host_ports=[80],
        labels={"app": "x"},
    )
    pod = pod_from_manifest(manifest)
    assert dict(pod.node_selector) == {"disk": "ssd"}
    assert pod.tolerations[0].key == "gpu"
    assert pod.topology_spread[0].max_skew == 2
    assert pod.host_ports[0].port == 80
    assert (
        pod.placement_signature()
        == pod_from_manifest(
            pod_manifest(
                "other",
                node_selector={"disk": "ssd"},
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                spread=[
                    {
                        "maxSkew": 2,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": {"app": "x"}},
                    }
                ],
                host_ports=[80],
                labels={"app": "x"},
            )
        ).placement_signature()
    )


def test_placement_keys_group_pods_exactly_as_their_signatures_do():
    """The solver groups pods by `placement_key` (cheaper than building a signature per pod): two pods have
    equal keys exactly when their signatures are equal, and the signature keeps what the key does."""
    from dataclasses import replace

    base = pod_from_manifest(pod_manifest("a", labels={"app": "x"}, owner=("ReplicaSet", "rs")))
    pods = [
        base,
        replace(
            base, name="b", uid="u-b", node_name="n1", phase="Running", created_at="2026-01-01T00:00:00Z"
        ),
        replace(base, labels=(*base.labels, ("statefulset.kubernetes.io/pod-name", "a-0"))),
        replace(base, annotations=(("note", "x"),)),
        replace(base, labels=(("app", "y"),)),
        replace(base, namespace="other"),
        replace(base, priority=10),
        replace(base, owner_name="rs2"),
        pod_from_manifest(pod_manifest("c", cpu="2", labels={"app": "x"}, owner=("ReplicaSet", "rs"))),
        pod_from_manifest(
            pod_manifest("d", labels={"app": "x"}, owner=("ReplicaSet", "rs"), host_ports=[80])
        ),
        pod_from_manifest(
            pod_manifest("e", labels={"app": "x"}, owner=("ReplicaSet", "rs"), node_selector={"disk": "ssd"})
        ),
    ]
    for one in pods:
        assert one.placement_signature().placement_key() == one.placement_key()
        for other in pods:
            same_key = one.placement_key() == other.placement_key()
            assert same_key == (one.placement_signature() == other.placement_signature())
    assert len({pod.placement_key() for pod in pods}) == len(pods) - 3  # name/uid/node, per-pod label, notes


@pytest.mark.parametrize(
    ("mutate", "path", "value"),
    [
        (
            lambda m: m["spec"]["containers"][0]["resources"]["requests"].update(cpu="lots"),
            "spec.containers[0].resources.requests.cpu",
            "lots",
        ),
        (
            lambda m: m["spec"].update(
                topologySpreadConstraints=[
                    {"maxSkew": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            ),
            "spec.topologySpreadConstraints[0].maxSkew",
            0,
        ),
        (
            lambda m: m["spec"].update(tolerations=[{"key": "a", "operator": "Maybe"}]),
            "spec.tolerations[0]",
            None,
        ),
        (
            lambda m: m["spec"].update(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]
                        }
                    }
                }
            ),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].values",
            [],
        ),
    ],
)
def test_errors_name_the_field_and_value(mutate, path, value):
    manifest = pod_manifest("p")
    mutate(manifest)
    with pytest.raises(PodManifestError) as caught:
        pod_from_manifest(manifest)
    assert caught.value.path == path
    if value is not None:
        assert caught.value.value == value


def test_the_snapshot_memo_tells_pods_apart_by_their_pod_level_resources():
    from longshore.services.snapshot import _requests

    containers = pod_manifest("p", cpu="2")["spec"]["containers"]  # one object shared, as compact pods do
    plain = _requests({"containers": containers})
    capped = _requests({"containers": containers, "resources": {"requests": {"cpu": "1"}}})
    assert plain.get("cpu") == 2000 and capped.get("cpu") == 1000
