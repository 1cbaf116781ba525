"""Volume topology: the node requirements a pod's PersistentVolumeClaims add, or why it cannot be placed.

Theory of operation (Karpenter's, kubernetes-sigs/karpenter
`pkg/controllers/provisioning/scheduling/volumetopology.go`): for each volume of a pod backed by a claim
(`Pod.volume_claims`: `persistentVolumeClaim.claimName`, or `<pod>-<volume>` for an ephemeral volume):

- a claim bound to a PersistentVolume (`spec.volumeName`) adds the match expressions of the volume's *first*
  `spec.nodeAffinity.required.nodeSelectorTerms` term (terms are ORed; upstream uses the first only), without
  the `kubernetes.io/hostname` expression for a `local` or `hostPath` volume (a new node has another name);
- an unbound claim with a StorageClass adds the class's *first* `allowedTopologies` term, each expression as
  `In` (WaitForFirstConsumer: the volume is made where the pod lands);
- any other volume adds nothing.

The requirements are ANDed into every ORed term of the pod's required node affinity (one term is made when it
has none), so no term can place the pod where its volume cannot attach. `validate=True` (pods being
provisioned for) also applies upstream's `ValidatePersistentVolumeClaims`: a missing or deleting claim, a
`Lost` claim, a bound claim whose volume is missing or deleting or which lacks the
`pv.kubernetes.io/bind-completed` annotation, an unbound claim without a StorageClass, with a missing one, or
with an `Immediate` one, each refuse the pod with a reason naming the object. Without `validate` (pods a
disruption simulation would move) only what the requirements need is checked, and an ephemeral claim is
skipped (upstream: it is deleted with the pod and made again where the pod lands).

Rules: pure (stdlib, frozen dataclasses); objects are read as `kubectl get -o json` prints them; a malformed
volume or class is a refusal naming the object and field, never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from longshore.core.model import Requirement
from longshore.core.pod_manifest import PodManifestError, node_term
from longshore.core.pods import Pod

HOSTNAME = "kubernetes.io/hostname"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


@dataclass(frozen=True, slots=True)
class Claim:
    volume_name: str = ""
    storage_class: str = ""
    deleting: bool = False
    lost: bool = False
    bind_completed: bool = False


@dataclass(frozen=True, slots=True)
class Volume:
    requirements: tuple[Requirement, ...] = ()
    deleting: bool = False
    error: str = ""  # the volume's node affinity cannot be read


@dataclass(frozen=True, slots=True)
class StorageClass:
    requirements: tuple[Requirement, ...] = ()
    immediate: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class Volumes:
    """The cluster's claims (by namespace, name), volumes and classes (by name), as read for one pass."""

    claims: Mapping[tuple[str, str], Claim]
    volumes: Mapping[str, Volume]
    classes: Mapping[str, StorageClass]


@dataclass(frozen=True, slots=True)
class Refusal:
    """The pod cannot be placed until its volumes are in order."""

    pod: Pod
    reason: str


def _get(obj: object, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _claim(obj: Mapping[str, Any]) -> Claim:
    meta, spec = _get(obj, "metadata"), _get(obj, "spec")
    return Claim(
        volume_name=str(spec.get("volumeName") or ""),
        storage_class=str(spec.get("storageClassName") or ""),
        deleting=meta.get("deletionTimestamp") is not None,
        lost=_get(obj, "status").get("phase") == "Lost",
        bind_completed=BIND_COMPLETED in _get(meta, "annotations"),
    )


def _volume(obj: Mapping[str, Any]) -> Volume:
    spec = _get(obj, "spec")
    deleting = _get(obj, "metadata").get("deletionTimestamp") is not None
    terms = _get(_get(spec, "nodeAffinity"), "required").get("nodeSelectorTerms")
    if not terms:
        return Volume((), deleting)
    path = "spec.nodeAffinity.required.nodeSelectorTerms"
    if not isinstance(terms, list):
        return Volume((), deleting, f"{path}: must be a list, got {terms!r}")
    try:
        requirements = node_term(terms[0], f"{path}[0]")
    except PodManifestError as error:
        return Volume((), deleting, str(error))
    if spec.get("local") is not None or spec.get("hostPath") is not None:
        requirements = tuple(r for r in requirements if r.key != HOSTNAME)
    return Volume(requirements, deleting)


def _storage_class(obj: Mapping[str, Any]) -> StorageClass:
    immediate = obj.get("volumeBindingMode") == "Immediate"  # unset: not refused, as upstream
    topologies = obj.get("allowedTopologies")
    if not topologies:
        return StorageClass((), immediate)
    found: list[Requirement] = []
    first = topologies[0] if isinstance(topologies, list) else None
    expressions = _get({"t": first}, "t").get("matchLabelExpressions")
    for i, expr in enumerate(expressions if isinstance(expressions, list) else ()):
        key = expr.get("key") if isinstance(expr, Mapping) else None
        values = expr.get("values") if isinstance(expr, Mapping) else None
        if not isinstance(key, str) or not key or not isinstance(values, list) or not values:
            field = f"allowedTopologies[0].matchLabelExpressions[{i}]"
            return StorageClass((), immediate, f"{field}: needs a key and at least one value, got {expr!r}")
        found.append(Requirement(key, "In", tuple(str(v) for v in values)))
    return StorageClass(tuple(found), immediate)


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = _get(obj, "metadata")
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def read_volumes(
    claims: Iterable[Mapping[str, Any]],
    volumes: Iterable[Mapping[str, Any]],
    classes: Iterable[Mapping[str, Any]],
) -> Volumes:
    """The listed PersistentVolumeClaims, PersistentVolumes and StorageClasses, as `inject` reads them."""
    return Volumes(
        claims={_name(c): _claim(c) for c in claims},
        volumes={_name(v)[1]: _volume(v) for v in volumes},
        classes={_name(s)[1]: _storage_class(s) for s in classes},
    )


def _requirements(pod: Pod, volumes: Volumes, validate: bool) -> tuple[Requirement, ...] | str:
    found: list[Requirement] = []
    for ref in pod.volume_claims:
        if ref.ephemeral and not validate:
            continue  # a moving pod's: made again where the pod lands (upstream skips it for bound pods)
        what = f"PersistentVolumeClaim {pod.namespace}/{ref.claim}"
        claim = volumes.claims.get((pod.namespace, ref.claim))
        if claim is None:
            return f"{what} not found"
        if validate and claim.deleting:
            return f"{what} is being deleted"
        if validate and claim.lost:
            return f"{what} is Lost (bound to a PersistentVolume that does not exist)"
        if claim.volume_name:
            volume = volumes.volumes.get(claim.volume_name)
            pv = f"PersistentVolume {claim.volume_name} of {what}"
            if volume is None:
                return f"{pv} not found"
            if volume.error:
                return f"{pv}: {volume.error}"
            if validate and volume.deleting:
                return f"{pv} is being deleted"
            if validate and not claim.bind_completed:
                return f"{what} is not bound yet (no {BIND_COMPLETED} annotation)"
            found += volume.requirements
            continue
        if not claim.storage_class:
            if validate:
                return f"{what} is unbound and names no storageClassName"
            continue
        storage_class = volumes.classes.get(claim.storage_class)
        sc = f"StorageClass {claim.storage_class} of {what}"
        if storage_class is None:
            return f"{sc} not found"
        if storage_class.error:
            return f"{sc}: {storage_class.error}"
        if validate and storage_class.immediate:
            return f"{what} is unbound and its {sc} has volumeBindingMode Immediate (it must be bound first)"
        found += storage_class.requirements
    return tuple(found)


def inject(pod: Pod, volumes: Volumes, *, validate: bool) -> Pod | Refusal:
    """`pod` with its volumes' requirements ANDed into each required node term, or why it cannot be placed."""
    if not pod.volume_claims:
        return pod
    found = _requirements(pod, volumes, validate)
    if isinstance(found, str):
        return Refusal(pod, found)
    if not found:
        return pod
    terms = pod.required_node_terms or ((),)
    return replace(pod, required_node_terms=tuple((*term, *found) for term in terms))
