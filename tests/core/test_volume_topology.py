"""`core.volume_topology`: the node requirements a pod's claims add (Karpenter's `VolumeTopology`), or a refusal.

Matrix: a claim bound to a zonal PersistentVolume (first term only; hostname dropped for local volumes); an
unbound claim whose StorageClass has `allowedTopologies` (first term, as `In`); an ephemeral volume's claim
(`<pod>-<volume>`), skipped for a moving pod; requirements ANDed into every existing required term; refusals
with reasons (claim, volume or class missing; claim not bound yet; Immediate class); the pod manifest's
`spec.volumes` parsed into `Pod.volume_claims`, and a clear error for a claim without a name.
"""

from __future__ import annotations

from typing import Any

import pytest

from longshore.core.model import Requirement
from longshore.core.pod_manifest import PodManifestError, pod_from_manifest
from longshore.core.pods import Pod, VolumeClaim
from longshore.core.volume_topology import BIND_COMPLETED, Refusal, inject, read_volumes

ZONE = "topology.ebs.csi.aws.com/zone"


def pvc(name: str, *, volume: str = "", storage_class: str = "", bound: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if volume and bound:
        meta["annotations"] = {BIND_COMPLETED: "yes"}
    spec: dict[str, Any] = {}
    if volume:
        spec["volumeName"] = volume
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": meta, "spec": spec}


def pv(name: str, *terms: list[dict[str, Any]], local: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}
    }
    if local:
        spec["local"] = {"path": "/mnt/disk"}
    return {"metadata": {"name": name}, "spec": spec}


def zone_expr(*zones: str, key: str = ZONE) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(zones)}


def sc(name: str, *zones: str, mode: str = "WaitForFirstConsumer") -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name}, "volumeBindingMode": mode}
    if zones:
        body["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]},
            {"matchLabelExpressions": [{"key": ZONE, "values": ["us-east-1c"]}]},
        ]
    return body


def pod(*claims: VolumeClaim, terms: tuple[tuple[Requirement, ...], ...] = (), node: str = "") -> Pod:
    return Pod("default", "db-0", volume_claims=claims, required_node_terms=terms, node_name=node)


def test_bound_claim_adds_the_first_term_of_its_volume() -> None:
    volumes = read_volumes(
        [pvc("data", volume="pv-1")], [pv("pv-1", [zone_expr("us-east-1b")], [zone_expr("us-east-1a")])], []
    )
    placed = inject(pod(VolumeClaim("data")), volumes, validate=True)
    assert isinstance(placed, Pod)
    assert placed.required_node_terms == ((Requirement(ZONE, "In", ("us-east-1b",)),),)


def test_local_volume_drops_the_hostname_expression() -> None:
    host = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
    volumes = read_volumes(
        [pvc("data", volume="pv-1")], [pv("pv-1", [host, zone_expr("us-east-1a")], local=True)], []
    )
    placed = inject(pod(VolumeClaim("data")), volumes, validate=True)
    assert isinstance(placed, Pod)
    assert placed.required_node_terms == ((Requirement(ZONE, "In", ("us-east-1a",)),),)


def test_unbound_claim_takes_the_first_allowed_topology_of_its_class() -> None:
    volumes = read_volumes([pvc("data", storage_class="gp3")], [], [sc("gp3", "us-east-1a", "us-east-1b")])
    placed = inject(pod(VolumeClaim("data")), volumes, validate=True)
    assert isinstance(placed, Pod)
    assert placed.required_node_terms == ((Requirement(ZONE, "In", ("us-east-1a", "us-east-1b")),),)


def test_class_without_topologies_adds_nothing() -> None:
    volumes = read_volumes([pvc("data", storage_class="gp3")], [], [sc("gp3")])
    unchanged = pod(VolumeClaim("data"))
    assert inject(unchanged, volumes, validate=True) == unchanged


def test_ephemeral_volume_names_its_claim_after_pod_and_volume() -> None:
    manifest = {
        "metadata": {"name": "db-0", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c"}],
            "volumes": [
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "tmp", "emptyDir": {}},
            ],
        },
    }
    parsed = pod_from_manifest(manifest)
    assert parsed.volume_claims == (VolumeClaim("db-0-scratch", ephemeral=True), VolumeClaim("data"))
    volumes = read_volumes(
        [pvc("db-0-scratch", storage_class="gp3"), pvc("data", storage_class="gp3")],
        [],
        [sc("gp3", "us-east-1b")],
    )
    placed = inject(parsed, volumes, validate=True)
    assert isinstance(placed, Pod)
    expected = Requirement(ZONE, "In", ("us-east-1b",))
    assert placed.required_node_terms == ((expected, expected),)
    moving = inject(parsed, volumes, validate=False)  # a bound pod's ephemeral claim is made again
    assert isinstance(moving, Pod) and moving.required_node_terms == ((expected,),)


def test_requirements_are_anded_into_every_existing_term() -> None:
    gpu = Requirement("karpenter.k8s.aws/instance-gpu-count", "Exists")
    arm = Requirement("kubernetes.io/arch", "In", ("arm64",))
    volumes = read_volumes([pvc("data", volume="pv-1")], [pv("pv-1", [zone_expr("us-east-1b")])], [])
    placed = inject(pod(VolumeClaim("data"), terms=((gpu,), (arm,))), volumes, validate=True)
    zone = Requirement(ZONE, "In", ("us-east-1b",))
    assert isinstance(placed, Pod)
    assert placed.required_node_terms == ((gpu, zone), (arm, zone))


@pytest.mark.parametrize(
    ("claims", "volumes", "classes", "reason"),
    [
        ([], [], [], "PersistentVolumeClaim default/data not found"),
        (
            [pvc("data", volume="pv-1")],
            [],
            [],
            "PersistentVolume pv-1 of PersistentVolumeClaim default/data not found",
        ),
        (
            [pvc("data", storage_class="gp3")],
            [],
            [],
            "StorageClass gp3 of PersistentVolumeClaim default/data not found",
        ),
        (
            [pvc("data")],
            [],
            [],
            "PersistentVolumeClaim default/data is unbound and names no storageClassName",
        ),
        (
            [pvc("data", volume="pv-1", bound=False)],
            [pv("pv-1", [zone_expr("us-east-1b")])],
            [],
            f"PersistentVolumeClaim default/data is not bound yet (no {BIND_COMPLETED} annotation)",
        ),
        (
            [pvc("data", storage_class="io2")],
            [],
            [sc("io2", mode="Immediate")],
            "has volumeBindingMode Immediate",
        ),
        (
            [pvc("data", volume="pv-1")],
            [pv("pv-1", [{"key": ZONE, "operator": "Near"}])],
            [],
            "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
    ],
)
def test_refusals_name_the_object(
    claims: list[dict[str, Any]], volumes: list[dict[str, Any]], classes: list[dict[str, Any]], reason: str
) -> None:
    refused = inject(pod(VolumeClaim("data")), read_volumes(claims, volumes, classes), validate=True)
    assert isinstance(refused, Refusal)
    assert reason in refused.reason


def test_claim_without_a_name_is_a_clear_manifest_error() -> None:
    manifest = {
        "metadata": {"name": "db-0"},
        "spec": {"containers": [{"name": "c"}], "volumes": [{"name": "d", "persistentVolumeClaim": {}}]},
    }
    with pytest.raises(PodManifestError, match=r"spec\.volumes\[0\]\.persistentVolumeClaim\.claimName"):
        pod_from_manifest(manifest)
