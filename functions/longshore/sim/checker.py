"""The rule checker: what must never happen in a simulation, watched from outside the system under test.

Theory of operation: the checker reads the emulator's store and moto, never Longshore's own records, so it
judges outcomes rather than intentions. It is told which removals the scenario itself asked for (a scale-down
or a deleted Deployment), and at every observation it compares the running pods with the previous look:

- *PodDisruptionBudget*: a running pod removed by anyone but the scenario while a PDB selecting it allowed no
  disruption (its `disruptionsAllowed` at the previous look was 0) is a violation.
- *do-not-disrupt*: a running pod annotated `karpenter.sh/do-not-disrupt: "true"` removed by anyone but the
  scenario is a violation.
- *Disruption budgets*: more nodes of a pool disrupted at once (being deleted, or tainted
  `karpenter.sh/disrupted`) than the pool's tightest budget (`nodes: "10%"` rounds up, as Karpenter does) is a
  violation.
- *Duplicate launches*: `note_launch` is called for every instance a CreateFleet launched; if another live
  instance already carries the same `karpenter.sh/nodeclaim` tag, the claim was launched twice.
- *Pods that never ran*: at the end, pods that exist, are not being deleted and were never Running; the ones
  that waited longer than `never_ran_grace_s` also count as a violation.

Removals the scenario did not ask for that broke no rule are counted as disruptions, not violations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from longshore.core import labels as wk
from longshore.core.model import ClusterConfig
from longshore.sim.kubeapi import disruption
from longshore.sim.kubeapi.meta import JSON, labels_of, metadata
from longshore.sim.kubeapi.selectors import selector_from_object
from longshore.sim.kubeapi.store import ObjectStore

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = metadata(pod)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def is_running(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not metadata(pod).get("deletionTimestamp")


def _owner_deployment(pod: Mapping[str, Any]) -> str | None:
    """`namespace/deployment` for a pod of a Deployment's ReplicaSet (`<deployment>-<hash>`)."""
    for ref in metadata(pod).get("ownerReferences") or []:
        if ref.get("kind") == "ReplicaSet":
            name = str(ref.get("name") or "")
            deployment = name.rsplit("-", 1)[0] if "-" in name else name
            return f"{metadata(pod).get('namespace') or 'default'}/{deployment}"
    return None


@dataclass
class _Seen:
    annotations: dict[str, str]
    labels: dict[str, str]
    namespace: str
    deployment: str | None


@dataclass
class RuleChecker:
    """Watches a simulation for broken rules (see the module docstring)."""

    store: ObjectStore
    config: ClusterConfig
    never_ran_grace_s: float = 600.0
    violations: list[str] = field(default_factory=list)
    disruptions: int = 0
    duplicate_launches: int = 0
    _running: dict[str, _Seen] = field(default_factory=dict)
    _blocked_pdbs: list[tuple[str, JSON]] = field(default_factory=list)  # (namespace, pdb) allowing nothing
    _expected: set[str] = field(default_factory=set)  # namespace/deployment the scenario shrank or deleted
    _budget_breached: set[str] = field(default_factory=set)
    _first_seen: dict[str, float] = field(default_factory=dict)

    # -- what the scenario asked for ------------------------------------------------------------------------

    def expect_removals(self, namespace: str, deployment: str) -> None:
        """Pods of this Deployment may go away: the scenario scaled it down or deleted it."""
        self._expected.add(f"{namespace}/{deployment}")

    # -- observations ---------------------------------------------------------------------------------------

    def scan(self, now: float) -> None:
        pods = self.store.view("pods")
        current: dict[str, JSON] = {pod_key(p): p for p in pods}
        for key in current:
            self._first_seen.setdefault(key, now)
        for key, seen in list(self._running.items()):
            pod = current.get(key)
            if pod is not None and not metadata(pod).get("deletionTimestamp"):
                continue
            del self._running[key]
            if seen.deployment is not None and seen.deployment in self._expected:
                continue
            self.disruptions += 1
            if seen.annotations.get(DO_NOT_DISRUPT) == "true":
                self.violations.append(f"t={now:.0f}s: pod {key} has {DO_NOT_DISRUPT}=true but was disrupted")
            for namespace, pdb in self._blocked_pdbs:
                if namespace == seen.namespace and selector_from_object(
                    (pdb.get("spec") or {}).get("selector")
                ).matches(seen.labels):
                    self.violations.append(
                        f"t={now:.0f}s: pod {key} was removed while PodDisruptionBudget "
                        f"{namespace}/{metadata(pdb).get('name')} allowed no disruption"
                    )
        for key, pod in current.items():
            if is_running(pod) and key not in self._running:
                meta = metadata(pod)
                self._running[key] = _Seen(
                    dict(meta.get("annotations") or {}),
                    labels_of(pod),
                    str(meta.get("namespace") or "default"),
                    _owner_deployment(pod),
                )
        self._blocked_pdbs = [
            (str(metadata(pdb).get("namespace")), pdb)
            for pdb in self.store.view("poddisruptionbudgets")
            if disruption.compute_status(self.store, pdb).get("disruptionsAllowed", 0) <= 0
        ]
        self._check_budgets(now, self.store.view("nodes"))

    def _check_budgets(self, now: float, nodes: Iterable[Mapping[str, Any]]) -> None:
        per_pool: dict[str, list[Mapping[str, Any]]] = {}
        for node in nodes:
            pool = labels_of(node).get(wk.NODEPOOL)
            if pool is not None:
                per_pool.setdefault(pool, []).append(node)
        for pool_name, members in per_pool.items():
            disrupting = sum(
                1
                for n in members
                if metadata(n).get("deletionTimestamp")
                or any(t.get("key") == DISRUPTED_TAINT_KEY for t in (n.get("spec") or {}).get("taints") or [])
            )
            if not disrupting:
                self._budget_breached.discard(pool_name)
                continue
            allowed = self._allowed(pool_name, len(members))
            if allowed is not None and disrupting > allowed and pool_name not in self._budget_breached:
                self._budget_breached.add(pool_name)
                self.violations.append(
                    f"t={now:.0f}s: {disrupting} node(s) of pool {pool_name} disrupted at once; its budget "
                    f"allows {allowed}"
                )

    def _allowed(self, pool_name: str, node_count: int) -> int | None:
        try:
            pool = self.config.pool(pool_name)
        except KeyError:
            return None
        limits: list[int] = []
        for budget in pool.disruption.budgets:
            if budget.schedule is not None:
                continue  # scheduled windows: not evaluated here
            text = budget.nodes.strip()
            if text.endswith("%"):
                limits.append(math.ceil(node_count * float(text[:-1]) / 100))
            elif text.isdigit():
                limits.append(int(text))
        return min(limits) if limits else None

    # -- launches -------------------------------------------------------------------------------------------

    def note_launch(
        self, claim_id: str | None, instance_id: str, live_with_same_claim: Iterable[str]
    ) -> None:
        """Called after each launch with the live instances that carry the same claim tag."""
        others = sorted(set(live_with_same_claim) - {instance_id})
        if claim_id and others:
            self.duplicate_launches += 1
            self.violations.append(
                f"node claim {claim_id} launched twice: {instance_id} while {', '.join(others)} was alive"
            )

    # -- the end --------------------------------------------------------------------------------------------

    def never_ran(self, first_running: Mapping[str, float]) -> list[str]:
        """Pods alive now (not DaemonSet pods, not being deleted) that were never seen Running."""
        alive = [
            p
            for p in self.store.view("pods")
            if not metadata(p).get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not any(r.get("kind") == "DaemonSet" for r in metadata(p).get("ownerReferences") or [])
        ]
        return sorted(pod_key(p) for p in alive if pod_key(p) not in first_running and not is_running(p))

    def finish(self, now: float, first_running: Mapping[str, float]) -> list[str]:
        stuck = [
            k
            for k in self.never_ran(first_running)
            if now - self._first_seen.get(k, now) >= self.never_ran_grace_s
        ]
        if stuck:
            shown = ", ".join(stuck[:5]) + (f" and {len(stuck) - 5} more" if len(stuck) > 5 else "")
            self.violations.append(f"{len(stuck)} pod(s) never ran: {shown}")
        return list(self.violations)
