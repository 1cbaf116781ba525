"""The Events the provisioner posts: why pods stay pending, why a launch failed, what was left out of a plan.

Rules:

- A pod the plan cannot place gets a `FailedScheduling` Warning with the engine's reason; a pod whose new
  claim could not be launched gets `LaunchFailed` (the offerings EC2 refused are skipped for 3 minutes); an
  object left out of the plan (unreadable pod, node or DaemonSet) gets `FailedScheduling` naming the field.
- At most `ProvisionerSettings.max_events_per_pass` Events of each kind per pass.
- An identical Event (same object, reason and message) is posted again only after
  `ProvisionerSettings.event_repeat_s` (Karpenter's recorder de-duplicates for 2 minutes).
- An Event is advice: a failure to post one is logged and never fails the pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from longshore.core.pods import Pod
from longshore.core.scheduling import Plan
from longshore.ports.clock import Clock
from longshore.ports.kube import Cluster, KubeEvent, ObjectRef
from longshore.services import snapshot

if TYPE_CHECKING:
    from longshore.services.provisioner import LaunchOutcome, ProvisionerSettings

log = logging.getLogger("longshore.services.provisioner")  # the provisioner's log lines, as before the split


class PodEvents:
    """Posts the provisioner's Events (see the module docstring); remembers what it posted and when."""

    def __init__(self, cluster: Cluster, clock: Clock, settings: ProvisionerSettings) -> None:
        self.cluster = cluster
        self.clock = clock
        self.settings = settings
        self._posted: dict[tuple[str, str], float] = {}  # (object, "reason: message") -> when posted

    def post(
        self, involved: ObjectRef, reason: str, message: str, kind: Literal["Normal", "Warning"]
    ) -> bool:
        key = (f"{involved.kind}/{involved.namespace}/{involved.name}", f"{reason}: {message}")
        now = self.clock.now()
        last = self._posted.get(key)
        if last is not None and now - last < self.settings.event_repeat_s:
            return False
        self._posted[key] = now
        try:
            self.cluster.post_event(KubeEvent(involved, reason, message, kind))
        except Exception as error:  # an Event is advice: never let it fail the pass
            log.warning("could not post an event", extra={"reason": reason, "error": str(error)})
        return True

    def _pod_ref(self, key: str, pods: Mapping[str, Pod]) -> ObjectRef:
        namespace, _, name = key.partition("/")
        pod = pods.get(key)
        return ObjectRef("Pod", name, namespace, pod.uid if pod else "")

    def report_unschedulable(self, plan: Plan, pending: Iterable[Pod]) -> None:
        if not plan.unschedulable:
            return
        by_key = {p.key: p for p in pending}
        posted = 0
        for key, reason in plan.unschedulable:
            if posted >= self.settings.max_events_per_pass:
                break
            posted += self.post(
                self._pod_ref(key, by_key), "FailedScheduling", f"Failed to schedule pod, {reason}", "Warning"
            )
        log.warning(
            "could not schedule pod(s)",
            extra={
                "pods": len(plan.unschedulable),
                "first": plan.unschedulable[0][0],
                "reason": plan.unschedulable[0][1],
            },
        )

    def report_failures(self, launches: Iterable[LaunchOutcome], plan: Plan, pending: Iterable[Pod]) -> None:
        by_key = {p.key: p for p in pending}
        posted = 0
        for outcome, claim in zip(launches, plan.new_claims, strict=False):
            if outcome.status != "failed":
                continue
            message = (
                f"could not launch a node of pool {outcome.nodepool}: {outcome.reason}; the offerings EC2 "
                "refused are skipped for 3 minutes, then retried"
            )
            for key in claim.pods:
                if posted >= self.settings.max_events_per_pass:
                    return
                posted += self.post(self._pod_ref(key, by_key), "LaunchFailed", message, "Warning")

    def report_skipped(self, skipped: Iterable[snapshot.Skipped]) -> None:
        for item in list(skipped)[: self.settings.max_events_per_pass]:
            log.warning(
                "object left out of the plan",
                extra={
                    "kind": item.kind,
                    "namespace": item.namespace,
                    "object": item.name,
                    "reason": item.reason,
                },
            )
            self.post(
                ObjectRef(item.kind, item.name, item.namespace), "FailedScheduling", item.reason, "Warning"
            )
