"""Volume topology applied to the pods a pass places (`core.volume_topology` decides; this module reads).

Where it applies, and why there: to the *pods being placed*, after they are parsed, never inside the parsed-pod
caches. The provisioner applies it to its pending pods each pass (with upstream's claim validation: a pod whose
claim, volume or class is missing or not ready is left out with a Warning Event naming the object, and stays
pending), and the disruption planner applies it to the pods a simulation would move (a pod whose volume cannot
be read cannot move, so its node is not a candidate). `services.snapshot.PodCache` and
`services.warm_snapshot` keep parsed pods by object identity across passes; a claim or volume changes without
the pod object changing, so requirements folded into the cached pod could go stale. Applying them per pass to
the few pods being placed reads the current objects every time, and the bound pods that only occupy nodes
(their requirements never matter) are left as they are.

Rules: the claims, volumes and classes are listed once each, and only when a pod being placed uses a claim.
"""

from __future__ import annotations

from collections.abc import Sequence

from longshore.core import volume_topology as vt
from longshore.core.pods import Pod
from longshore.ports.kube import VolumeSource
from longshore.services.snapshot import Skipped


def read(source: VolumeSource) -> vt.Volumes:
    """One list of each kind."""
    return vt.read_volumes(
        source.list_persistent_volume_claims(),
        source.list_persistent_volumes(),
        source.list_storage_classes(),
    )


def apply(
    pods: Sequence[Pod], source: VolumeSource, *, validate: bool
) -> tuple[tuple[Pod, ...], tuple[Skipped, ...]]:
    """`pods` with their volumes' node requirements, and the pods refused (as `Skipped` Pods with the reason);
    no reads when no pod uses a claim."""
    if not any(p.volume_claims for p in pods):
        return tuple(pods), ()
    volumes = read(source)
    kept: list[Pod] = []
    refused: list[Skipped] = []
    for pod in pods:
        found = vt.inject(pod, volumes, validate=validate)
        if isinstance(found, vt.Refusal):
            refused.append(Skipped("Pod", pod.namespace, pod.name, f"volume topology: {found.reason}"))
        else:
            kept.append(found)
    return tuple(kept), tuple(refused)


def apply_moving(
    pods: Sequence[Pod], source: VolumeSource
) -> tuple[tuple[Pod, ...], tuple[tuple[Pod, str], ...]]:
    """Bound pods a simulation may move, each with its volumes' requirements (no claim validation; ephemeral
    claims skipped), and the pods whose volumes cannot be read with the reason. Every pod comes back, a
    refused one unchanged: it still occupies its node, and the caller decides that it cannot move."""
    if not any(p.volume_claims for p in pods):
        return tuple(pods), ()
    volumes = read(source)
    kept: list[Pod] = []
    refused: list[tuple[Pod, str]] = []
    for pod in pods:
        if pod.is_daemonset or pod.is_mirror or pod.is_terminal or pod.deleting:
            kept.append(pod)  # never moved (`ManagedNode.reschedulable_pods`)
            continue
        found = vt.inject(pod, volumes, validate=False)
        if isinstance(found, vt.Refusal):
            refused.append((pod, found.reason))
            kept.append(pod)
        else:
            kept.append(found)
    return tuple(kept), tuple(refused)
