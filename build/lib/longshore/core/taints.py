"""Taints and tolerations: which pods may land on which nodes, with Kubernetes' matching rules.

Theory of operation: a toleration matches a taint (Kubernetes `Toleration.ToleratesTaint`) when its effect is
empty or equal, its key is empty or equal, and either its operator is `Exists` or (operator `Equal` or
empty) its value equals the taint's. An empty key with `Exists` tolerates everything. A pod tolerates a set of
taints when each taint is matched by at least one toleration (Karpenter `Taints.Tolerates`). Karpenter asks
for `PreferNoSchedule` taints to be tolerated too, until it relaxes that as its last preference; the
kube-scheduler does not: `tolerates(..., ignore_prefer_no_schedule=True)` gives the latter.

Startup taints of a pool and the *ephemeral* taints that nodes carry while booting (not-ready, unreachable,
the cloud-provider uninitialized taint, `karpenter.sh/unregistered`, and any key under `readiness.k8s.io/`)
are ignored when simulating pods onto nodes that are not initialized yet (`scheduling_taints`), because
they will be gone before the node is initialized (Karpenter core `pkg/scheduling/taints.go`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from longshore.core.model import Taint

TolerationOperator = Literal["Exists", "Equal"]

NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
UNINITIALIZED: Final = "node.cloudprovider.kubernetes.io/uninitialized"
READINESS_PREFIX: Final = "readiness.k8s.io/"

UNREGISTERED_TAINT: Final = Taint("karpenter.sh/unregistered", "NoExecute")
DISRUPTED_TAINT: Final = Taint("karpenter.sh/disrupted", "NoSchedule")

#: Taints every new node carries for a while; matched on key and effect (value ignored).
EPHEMERAL_TAINTS: Final = (
    Taint(NOT_READY, "NoSchedule"),
    Taint(NOT_READY, "NoExecute"),
    Taint(UNREACHABLE, "NoSchedule"),
    Taint(UNINITIALIZED, "NoSchedule", "true"),
    UNREGISTERED_TAINT,
)


class TolerationError(ValueError):
    """A toleration manifest that Kubernetes would reject."""


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration. Empty `key` with `Exists` matches every key; empty `effect` matches every effect."""

    key: str = ""
    operator: TolerationOperator = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Toleration:
        """From a Kubernetes toleration dict (`{"key": ..., "operator": "Exists", "effect": ...}`)."""
        written = data.get("operator") or "Equal"
        if written not in ("Exists", "Equal"):
            raise TolerationError(f"toleration operator must be Exists or Equal, got {written!r}")
        operator: TolerationOperator = "Exists" if written == "Exists" else "Equal"
        key = str(data.get("key") or "")
        value = str(data.get("value") or "")
        if operator == "Exists" and value:
            raise TolerationError(f"toleration {key!r}: operator Exists takes no value, got {value!r}")
        if not key and operator != "Exists":
            raise TolerationError("toleration with an empty key must use operator Exists")
        seconds = data.get("tolerationSeconds")
        return Toleration(
            key=key,
            operator=operator,
            value=value,
            effect=str(data.get("effect") or ""),
            toleration_seconds=None if seconds is None else int(seconds),
        )

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


#: Tolerates every taint (what DaemonSets like kube-proxy carry).
TOLERATE_ALL: Final = Toleration(operator="Exists")


def describe_taint(taint: Taint) -> str:
    """`key=value:Effect`, or `key:Effect` without a value, as kubectl prints it."""
    return f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"


def untolerated(
    tolerations: Iterable[Toleration], taints: Iterable[Taint], *, ignore_prefer_no_schedule: bool = False
) -> tuple[Taint, ...]:
    """The taints that no toleration matches (empty when the pod may land)."""
    held = tuple(tolerations)
    return tuple(
        taint
        for taint in taints
        if not (ignore_prefer_no_schedule and taint.effect == "PreferNoSchedule")
        and not any(t.tolerates(taint) for t in held)
    )


def tolerates(
    tolerations: Iterable[Toleration], taints: Iterable[Taint], *, ignore_prefer_no_schedule: bool = False
) -> bool:
    """True when every taint is tolerated."""
    return not untolerated(tolerations, taints, ignore_prefer_no_schedule=ignore_prefer_no_schedule)


def untolerated_reason(
    tolerations: Iterable[Toleration], taints: Iterable[Taint], *, subject: str = "the pool"
) -> str | None:
    """None when tolerated; else "does not tolerate taint nvidia.com/gpu=true:NoSchedule of the pool"."""
    missing = untolerated(tolerations, taints)
    if not missing:
        return None
    listed = ", ".join(describe_taint(t) for t in missing)
    noun = "taint" if len(missing) == 1 else "taints"
    return f"does not tolerate {noun} {listed} of {subject}"


def is_ephemeral(taint: Taint) -> bool:
    """Whether the taint is one a booting node carries only until it is initialized."""
    if taint.key.startswith(READINESS_PREFIX):
        return True
    return any(taint.key == e.key and taint.effect == e.effect for e in EPHEMERAL_TAINTS)


def matches_taint(a: Taint, b: Taint) -> bool:
    """Kubernetes `Taint.MatchTaint`: same key and effect."""
    return a.key == b.key and a.effect == b.effect


def scheduling_taints(
    node_taints: Iterable[Taint], startup_taints: Iterable[Taint] = (), *, initialized: bool = True
) -> tuple[Taint, ...]:
    """The taints a pod must tolerate to be simulated onto a node.

    On an initialized node every taint counts. On a node that is not initialized yet (a new or in-flight
    claim), ephemeral taints and the pool's startup taints are ignored.
    """
    taints = tuple(node_taints)
    if initialized:
        return taints
    startup = tuple(startup_taints)
    return tuple(t for t in taints if not is_ephemeral(t) and not any(matches_taint(t, s) for s in startup))
