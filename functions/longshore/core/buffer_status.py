"""A CapacityBuffer's state after a provisioner pass, as SIG Autoscaling's `status` and as one line.

The status fields are the API's (kubernetes/autoscaler `cluster-autoscaler/apis/capacitybuffer/
autoscaling.x-k8s.io/v1alpha1/types.go`, `CapacityBufferStatus`), filled as Cluster Autoscaler fills them
(`cluster-autoscaler/capacitybuffer/common/common.go`, `processors/capacitybuffer/pod_list_processor.go`):

- `provisioningStrategy`: `buffer.x-k8s.io/active-capacity` (the only one Longshore acts on).
- `replicas`: the number of virtual pods the buffer resolved to (after `percentage` and `limits`); absent
  when the buffer is not ready.
- `podTemplateRef` / `podTemplateGeneration`: the PodTemplate a `podTemplateRef` buffer used, and its
  `metadata.generation` when the template was read from the cluster. A `scalableRef` buffer has none:
  Longshore takes the workload's own `spec.template` and creates no PodTemplate.
- `conditions` (metav1.Condition):
  - `ReadyForProvisioning`: True (`AttributesSetSuccessfully`) once the buffer resolved; False
    (`InvalidBuffer` for a spec Longshore cannot use, `ReferenceNotFound` for a PodTemplate or workload
    that does not exist, `InvalidPodTemplate` otherwise) with the reason as message.
  - `Provisioning`: True (`FakePodsInjected`) when every virtual pod was placed in the pass's plan, on
    capacity that exists or is launching or on new NodeClaims; False with `BufferIsEmpty` (0 replicas),
    `NotReadyForProvisioning`, or `CapacityNotAvailable` (some virtual pods fit nowhere, or were left out so
    that real pods go first). The message counts where the virtual pods went.
  A condition keeps its `lastTransitionTime` while its status does not change; `observedGeneration` is the
  buffer's `metadata.generation` when known.

`Placement.of` counts, per buffer, where a plan put its virtual pods. `describe` is the one line a log,
`longshore status` and a config-file buffer (which has no object to hold a status) use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from longshore.core.buffers import ACTIVE_CAPACITY, Resolved
from longshore.core.karpenter_objects import rfc3339
from longshore.core.scheduling import Plan

READY = "ReadyForProvisioning"
PROVISIONING = "Provisioning"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one buffer's virtual pods went in a plan."""

    existing: int = 0  # on nodes or launching claims
    new: int = 0  # on NodeClaims this plan creates
    unplaced: int = 0  # fit nowhere, or left out of the pass so that real pods go first

    @staticmethod
    def of(plan: Plan | None, resolved: tuple[Resolved, ...]) -> dict[str, Placement]:
        where = plan.placements() if plan is not None else {}
        new_names = {c.name for c in plan.new_claims} if plan is not None else set()
        result: dict[str, Placement] = {}
        for item in resolved:
            targets = [where.get(p.key) for p in item.pods]
            new = sum(1 for t in targets if t in new_names)
            unplaced = sum(1 for t in targets if t is None)
            result[item.buffer.key] = Placement(len(targets) - new - unplaced, new, unplaced)
        return result


def _not_ready_reason(message: str) -> str:
    if message.endswith("not found"):
        return "ReferenceNotFound"
    return "InvalidPodTemplate"


def _condition(
    kind: str,
    ok: bool,
    reason: str,
    message: str,
    previous: Mapping[str, Any],
    now: float,
    generation: int | None,
) -> dict[str, Any]:
    status = "True" if ok else "False"
    old = next((c for c in previous.get("conditions") or () if c.get("type") == kind), None)
    since = old.get("lastTransitionTime") if old and old.get("status") == status else None
    condition: dict[str, Any] = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since or rfc3339(now),
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    return condition


def _not_provisioning(previous: Mapping[str, Any], now: float, generation: int | None) -> dict[str, Any]:
    """`Provisioning` False because the buffer is not ready (or not valid)."""
    return _condition(
        PROVISIONING,
        False,
        "NotReadyForProvisioning",
        "CapacityBuffer is not ready for provisioning",
        previous,
        now,
        generation,
    )


def _generation(obj: Mapping[str, Any] | None) -> int | None:
    value = ((obj or {}).get("metadata") or {}).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def placement_message(placement: Placement) -> str:
    return (
        f"{placement.existing} virtual pod(s) on capacity that exists or is launching, {placement.new} on new "
        f"NodeClaims, {placement.unplaced} placed nowhere"
    )


def buffer_status(
    resolved: Resolved, placement: Placement, obj: Mapping[str, Any] | None, now: float
) -> dict[str, Any]:
    """The `status` of a resolved buffer after a pass (module docstring); `obj` is the object as read."""
    previous = (obj or {}).get("status") or {}
    generation = _generation(obj)
    buffer = resolved.buffer
    status: dict[str, Any] = {"provisioningStrategy": ACTIVE_CAPACITY}
    if not resolved.ready:
        reason = _not_ready_reason(resolved.reason)
        conditions = [
            _condition(READY, False, reason, resolved.reason, previous, now, generation),
            _not_provisioning(previous, now, generation),
        ]
        return {**status, "conditions": conditions}
    if buffer.pod_template is not None:
        status["podTemplateRef"] = {"name": buffer.pod_template}
        if resolved.template_generation is not None:
            status["podTemplateGeneration"] = resolved.template_generation
    status["replicas"] = len(resolved.pods)
    ready = _condition(READY, True, "AttributesSetSuccessfully", "ready", previous, now, generation)
    if not resolved.pods:
        provisioning = _condition(
            PROVISIONING,
            False,
            "BufferIsEmpty",
            "CapacityBuffer has zero replicas",
            previous,
            now,
            generation,
        )
    elif placement.unplaced:
        provisioning = _condition(
            PROVISIONING,
            False,
            "CapacityNotAvailable",
            placement_message(placement),
            previous,
            now,
            generation,
        )
    else:
        provisioning = _condition(
            PROVISIONING, True, "FakePodsInjected", placement_message(placement), previous, now, generation
        )
    return {**status, "conditions": [ready, provisioning]}


def invalid_status(message: str, obj: Mapping[str, Any] | None, now: float) -> dict[str, Any]:
    """The `status` of a cluster object Longshore cannot use (`core.buffers.BufferError`)."""
    previous = (obj or {}).get("status") or {}
    generation = _generation(obj)
    return {
        "provisioningStrategy": ACTIVE_CAPACITY,
        "conditions": [
            _condition(READY, False, "InvalidBuffer", message, previous, now, generation),
            _not_provisioning(previous, now, generation),
        ],
    }


def describe(resolved: Resolved, placement: Placement) -> str:
    """One line: `default/warm (clusters/demo.yaml:120): 2 replicas; 2 virtual pod(s) on ...`."""
    where = resolved.buffer.origin or "cluster"
    if not resolved.ready:
        return f"{resolved.buffer.key} ({where}): not ready: {resolved.reason}"
    return f"{resolved.buffer.key} ({where}): {len(resolved.pods)} replicas; {placement_message(placement)}"
