"""When pods last arrived on or left each managed node: the input of Karpenter's `consolidateAfter` clock.

Theory of operation. The disruption planner sees the cluster only as a series of snapshots, so a node's last
pod event is inferred from what successive snapshots show (`PodEventTracker.observe`, once per pass per node):

- a running pod counts from its bind time (`PodScheduled=True` transition, else `status.startTime`, else the
  pod's creation);
- a terminating pod counts from the start of its deletion (`deletionTimestamp - deletionGracePeriodSeconds`,
  the pod's `terminationGracePeriodSeconds` or 30 s when the grace is not written), never later than now;
- a pod that vanished between two passes without being seen terminating left at the pass that noticed.

DaemonSet pods, mirror (static) pods and finished pods (`Succeeded`/`Failed`) are not the node's workload and
never count. Invariants: a node's last event time only moves forward; the tracker keeps state only for the
nodes it was last told to keep (`forget_except`).

A cold container starts from the node's claim: the claim's `last_pod_event_at` (written by the service when it
moved), and, when the claim says the node had pods not already terminating (`had_pods`) and none are left,
they left "now".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from longshore.core.claims import NodeClaim
from longshore.core.drain import parse_timestamp
from longshore.ports.kube import Manifest

_RECORDED = "\0recorded"  # stands for the pods a claim record says the node had


@dataclass
class PodEventTracker:
    """When pods last arrived on or left each node, as far as successive snapshots can tell."""

    last_event: dict[str, float] = field(default_factory=dict)
    _present: dict[str, frozenset[str]] = field(default_factory=dict)
    _terminating: dict[str, frozenset[str]] = field(default_factory=dict)

    def observe(
        self, node: str, pods: Sequence[Manifest], now: float, recorded: NodeClaim | None = None
    ) -> float | None:
        """Record this pass's pods of `node`; returns the node's last pod event time (None: none known).

        `recorded` is the node's claim: a tracker that has not seen the node yet (a cold container) starts
        from the claim's `last_pod_event_at`, and when the claim says the node had pods and none are left,
        they left since then (the moment is now).
        """
        moments: list[float] = []
        if node not in self._present and recorded is not None:
            if recorded.last_pod_event_at is not None:
                self.last_event[node] = recorded.last_pod_event_at
            if recorded.had_pods:
                self._present[node] = frozenset({_RECORDED})
        present: set[str] = set()
        terminating: set[str] = set()
        for manifest in pods:
            meta = manifest.get("metadata") or {}
            if _is_daemon_or_mirror(manifest) or (manifest.get("status") or {}).get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
            present.add(uid)
            deleted_at = parse_timestamp(meta.get("deletionTimestamp"))
            if deleted_at is not None:
                terminating.add(uid)
                grace = meta.get("deletionGracePeriodSeconds")
                if not isinstance(grace, int | float):
                    grace = (manifest.get("spec") or {}).get("terminationGracePeriodSeconds")
                grace = float(grace) if isinstance(grace, int | float) else 30.0
                moments.append(min(deleted_at - grace, now))
            else:
                bound = _bound_at(manifest)
                if bound is not None:
                    moments.append(bound)
        vanished = self._present.get(node, frozenset()) - present
        if _RECORDED in vanished and present:
            vanished -= {_RECORDED}  # pods still there: nothing is known to have left
        if vanished - self._terminating.get(node, frozenset()):
            moments.append(now)  # left between two passes without being seen terminating
        self._present[node] = frozenset(present)
        self._terminating[node] = frozenset(terminating)
        if moments:
            self.last_event[node] = max(self.last_event.get(node, moments[0]), *moments)
        return self.last_event.get(node)

    def has_pods(self, node: str) -> bool:
        """Whether the last observation of `node` saw pods on it that were not already leaving (DaemonSet and
        mirror pods aside): a terminating pod's departure is already in the clock, so a cold container must
        not count its vanishing as a new event."""
        staying = self._present.get(node, frozenset()) - self._terminating.get(node, frozenset())
        return bool(staying - {_RECORDED})

    def forget_except(self, nodes: Iterable[str]) -> None:
        keep = set(nodes)
        for table in (self.last_event, self._present, self._terminating):
            for name in [n for n in table if n not in keep]:
                del table[name]


def _is_daemon_or_mirror(manifest: Manifest) -> bool:
    meta = manifest.get("metadata") or {}
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return True
    return any(
        ref.get("kind") == "DaemonSet"
        for ref in meta.get("ownerReferences") or ()
        if isinstance(ref, Mapping)
    )


def _bound_at(manifest: Manifest) -> float | None:
    status = manifest.get("status") or {}
    for condition in status.get("conditions") or ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            moment = parse_timestamp(condition.get("lastTransitionTime"))
            if moment is not None:
                return moment
    return parse_timestamp(status.get("startTime")) or parse_timestamp(
        (manifest.get("metadata") or {}).get("creationTimestamp")
    )
