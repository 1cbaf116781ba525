"""Draining a node: which pods are left alone, which are evicted now, which wait, which are deleted.

Theory of operation (kubernetes-sigs/karpenter `pkg/controllers/node/termination/terminator/terminator.go` and `eviction.go`): a drain is a series of
*passes*. Each pass looks at the pods on the node and returns a `DrainPlan`; the caller performs it and
comes back a few seconds later. The plan is a pure function of the pods, the time and the deadline:

- **Left alone**: terminal pods (Succeeded/Failed), DaemonSet pods, mirror (static) pods, pods that tolerate
  the `karpenter.sh/disrupted:NoSchedule` taint, and pods stuck terminating more than 60 s past their
  deletion timestamp. The drain never waits for them.
- **Forced deletion**: with a deadline, a pod still present once `now >= deadline - its grace period` is
  deleted with a grace period that ends by the deadline, whatever its PDB or do-not-disrupt says.
- **Tiers**: the remaining pods are evicted in tiers, and a tier must be gone before the next starts:
  non-critical pods first, then `system-cluster-critical` / `system-node-critical` ones.
- **Waiting**: pods already terminating, pods with an active `karpenter.sh/do-not-disrupt` (the value
  `"true"`, or a duration such as `"30m"` counted from the pod's creation) or the legacy
  `karpenter.sh/do-not-evict: "true"`, and pods in a later tier.

A PDB is not visible here: an eviction that a PDB refuses (HTTP 429) is simply retried on the next pass.
The drain is done when `DrainPlan.remaining == 0`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

DISRUPTED_TAINT_KEY: Final = "karpenter.sh/disrupted"
DO_NOT_DISRUPT: Final = "karpenter.sh/do-not-disrupt"
DO_NOT_EVICT: Final = "karpenter.sh/do-not-evict"  # v1alpha5 name of do-not-disrupt
MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
CRITICAL_PRIORITY_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
STUCK_TERMINATING_SECONDS: Final = 60.0
DEFAULT_GRACE_SECONDS: Final = 30

LeftReason = Literal["terminal", "daemonset", "mirror", "tolerates-disrupted", "stuck-terminating"]
WaitReason = Literal["terminating", "do-not-disrupt", "later-tier"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_go_duration(text: str) -> float | None:
    """Seconds in a Go duration string ("90s", "1h30m", "1.5h"), or None when it is not one."""
    body = text.strip()
    sign = 1.0
    if body and body[0] in "+-":
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    if not body:
        return None
    total, position = 0.0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(body):
        return None
    return sign * total


def parse_timestamp(text: object) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp as Kubernetes writes it, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        if self.effect and self.effect != effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == key
        return self.key == key and self.value == value


@dataclass(frozen=True, slots=True)
class DrainPod:
    """The part of a pod that draining needs (parse with `drain_pod_from_manifest`)."""

    namespace: str
    name: str
    uid: str = ""
    phase: str = "Running"
    owner_kinds: tuple[str, ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    priority_class_name: str = ""
    priority: int = 0
    tolerations: tuple[Toleration, ...] = ()
    created_epoch: float | None = None
    deletion_epoch: float | None = None
    grace_seconds: int = DEFAULT_GRACE_SECONDS

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def annotation(self, key: str) -> str | None:
        return dict(self.annotations).get(key)

    @property
    def is_daemonset(self) -> bool:
        return "DaemonSet" in self.owner_kinds

    @property
    def is_mirror(self) -> bool:
        return "Node" in self.owner_kinds or self.annotation(MIRROR_ANNOTATION) is not None

    @property
    def is_critical(self) -> bool:
        return self.priority_class_name in CRITICAL_PRIORITY_CLASSES

    @property
    def tolerates_disrupted(self) -> bool:
        return any(t.tolerates(DISRUPTED_TAINT_KEY, "", "NoSchedule") for t in self.tolerations)


def drain_pod_from_manifest(manifest: Mapping[str, Any]) -> DrainPod:
    """Read a Pod as `kubectl get pod -o json` prints it (missing fields take Kubernetes' defaults)."""
    metadata: Mapping[str, Any] = manifest.get("metadata") or {}
    spec: Mapping[str, Any] = manifest.get("spec") or {}
    status: Mapping[str, Any] = manifest.get("status") or {}
    owners = tuple(str(ref.get("kind", "")) for ref in metadata.get("ownerReferences") or ())
    tolerations = tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in spec.get("tolerations") or ()
    )
    grace = spec.get("terminationGracePeriodSeconds")
    return DrainPod(
        namespace=str(metadata.get("namespace") or "default"),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        phase=str(status.get("phase") or "Pending"),
        owner_kinds=owners,
        annotations=tuple(sorted((str(k), str(v)) for k, v in (metadata.get("annotations") or {}).items())),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        priority=int(spec.get("priority") or 0),
        tolerations=tolerations,
        created_epoch=parse_timestamp(metadata.get("creationTimestamp")),
        deletion_epoch=parse_timestamp(metadata.get("deletionTimestamp")),
        grace_seconds=int(grace) if isinstance(grace, int) and grace >= 0 else DEFAULT_GRACE_SECONDS,
    )


def do_not_disrupt_active(pod: DrainPod, now: float) -> bool:
    """Whether the pod asks not to be evicted right now.

    `karpenter.sh/do-not-disrupt: "true"` protects until the deadline; a duration value ("30m") protects
    while the pod is younger than that; any other value protects nothing. The v1alpha5
    `karpenter.sh/do-not-evict: "true"` is honoured the same way as "true".
    """
    if (pod.annotation(DO_NOT_EVICT) or "").strip().lower() == "true":
        return True
    value = pod.annotation(DO_NOT_DISRUPT)
    if value is None:
        return False
    if value.strip().lower() == "true":
        return True
    duration = parse_go_duration(value)
    if duration is None or duration <= 0 or pod.created_epoch is None:
        return False
    return now < pod.created_epoch + duration


def left_reason(pod: DrainPod, now: float) -> LeftReason | None:
    """Why the drain leaves this pod alone, or None when the drain waits for it to go."""
    if pod.phase in ("Succeeded", "Failed"):
        return "terminal"
    if pod.is_mirror:
        return "mirror"
    if pod.is_daemonset:
        return "daemonset"
    if pod.tolerates_disrupted:
        return "tolerates-disrupted"
    if pod.deletion_epoch is not None and now > pod.deletion_epoch + STUCK_TERMINATING_SECONDS:
        return "stuck-terminating"
    return None


def effective_deadline(
    command_deadline: float | None, started_at: float, termination_grace_period_s: int | None
) -> float | None:
    """The drain deadline: the earlier of the command's deadline and start + the pool's terminationGracePeriod."""
    candidates = [d for d in (command_deadline,) if d is not None]
    if termination_grace_period_s is not None:
        candidates.append(started_at + termination_grace_period_s)
    return min(candidates) if candidates else None


@dataclass(frozen=True, slots=True)
class ForcedDeletion:
    pod: DrainPod
    grace_seconds: int


@dataclass(frozen=True, slots=True)
class Waiting:
    pod: DrainPod
    reason: WaitReason


@dataclass(frozen=True, slots=True)
class Left:
    pod: DrainPod
    reason: LeftReason


@dataclass(frozen=True, slots=True)
class DrainPlan:
    evict: tuple[DrainPod, ...] = ()
    delete: tuple[ForcedDeletion, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    left: tuple[Left, ...] = ()
    next_forced_at: float | None = None  # the earliest moment a waiting pod becomes due for deletion

    @property
    def remaining(self) -> int:
        """Pods the drain still waits for (evicted now, deleted now, or waiting)."""
        return len(self.evict) + len(self.delete) + len(self.waiting)

    def waiting_for(self, reason: WaitReason) -> tuple[DrainPod, ...]:
        return tuple(w.pod for w in self.waiting if w.reason == reason)


def _eviction_order(pod: DrainPod) -> tuple[int, str, str]:
    return (pod.priority, pod.namespace, pod.name)


def plan_drain(pods: Iterable[DrainPod], now: float, deadline: float | None) -> DrainPlan:
    """One drain pass: see the module docstring for the rules."""
    left: list[Left] = []
    drainable: list[DrainPod] = []
    for pod in pods:
        reason = left_reason(pod, now)
        if reason is None:
            drainable.append(pod)
        else:
            left.append(Left(pod, reason))

    delete: list[ForcedDeletion] = []
    rest: list[DrainPod] = []
    for pod in drainable:
        if deadline is not None and pod.deletion_epoch is None and now >= deadline - pod.grace_seconds:
            delete.append(ForcedDeletion(pod, max(math.ceil(deadline - now), 0)))
        elif deadline is not None and pod.deletion_epoch is not None and now >= deadline:
            delete.append(ForcedDeletion(pod, 0))
        else:
            rest.append(pod)

    active_tier = min((int(p.is_critical) for p in rest), default=0)
    evict: list[DrainPod] = []
    waiting: list[Waiting] = []
    for pod in sorted(rest, key=_eviction_order):
        if pod.deletion_epoch is not None:
            waiting.append(Waiting(pod, "terminating"))
        elif int(pod.is_critical) > active_tier:
            waiting.append(Waiting(pod, "later-tier"))
        elif do_not_disrupt_active(pod, now):
            waiting.append(Waiting(pod, "do-not-disrupt"))
        else:
            evict.append(pod)

    next_forced_at: float | None = None
    if deadline is not None:
        times = [deadline - w.pod.grace_seconds for w in waiting if w.pod.deletion_epoch is None]
        times += [deadline for w in waiting if w.pod.deletion_epoch is not None]
        times += [deadline - p.grace_seconds for p in evict]
        next_forced_at = min(times) if times else None
    return DrainPlan(
        evict=tuple(evict),
        delete=tuple(delete),
        waiting=tuple(waiting),
        left=tuple(left),
        next_forced_at=next_forced_at,
    )


def summarize(plan: DrainPlan, blocked_by_pdb: Sequence[str] = ()) -> str:
    """A one-line human summary of why a drain is not finished (used in events and the execution output)."""
    parts = []
    if blocked_by_pdb:
        parts.append(
            f"{len(blocked_by_pdb)} blocked by a PodDisruptionBudget ({', '.join(blocked_by_pdb[:3])})"
        )
    reasons: tuple[WaitReason, ...] = ("do-not-disrupt", "terminating", "later-tier")
    for reason in reasons:
        pods = plan.waiting_for(reason)
        if pods:
            parts.append(f"{len(pods)} {reason} ({', '.join(p.key for p in pods[:3])})")
    if plan.delete:
        parts.append(f"{len(plan.delete)} deleted at the deadline")
    return "; ".join(parts) if parts else "drained"
