"""The rule checker: what must never happen in a simulation, watched from outside the system under test.

Theory of operation: the checker reads the emulator's store and moto, never Longshore's own records, so it
judges outcomes rather than intentions. It is told which removals the scenario itself asked for (a scale-down
or a deleted Deployment), which instances were terminated (by Longshore through EC2, or reclaimed by EC2
itself), and each node's drain deadline as the workflow's Taint step reported it (what one reads in the
execution history). At every observation it compares the pods with the previous look. The rules, exactly:

1. *PodDisruptionBudget.* A pod counts as *removed* when it was Running (and not terminating) at the previous
   look and is now terminating or gone. For every PDB selecting it, the removals since the previous look are
   counted against the PDB's `disruptionsAllowed` at the previous look (`currentHealthy - desiredHealthy`,
   the emulator's disruption-controller arithmetic); a removal beyond that allowance took the healthy count
   below the PDB's minimum and is a violation, unless (a) the scenario asked for it, (b) the pod's node had a
   drain deadline and the deadline had passed (the workflow deletes what is left at its deadline), or (c) its
   node's instance had just been terminated (then rule 4 judges it).
2. *do-not-disrupt.* A removed pod whose `karpenter.sh/do-not-disrupt` was active at that moment (`"true"`, or
   a duration not yet elapsed since the pod's creation), or with `karpenter.sh/do-not-evict: "true"`, is a
   violation under the same exceptions (a)-(c).
3. *Disruption budgets.* A node is disrupting from its *decision* until it is gone or no longer tainted: the
   decision is the `requestedAt` of the workflow execution that took it (what the execution history shows;
   a surge decides long before its taint, which waits for the replacement), else the instant it was first
   seen carrying the `karpenter.sh/disrupted` taint or being deleted (a `kubectl delete node`). Its reason is
   the `longshore.io/disruption-reason` annotation the workflow wrote. Whenever a node of a *graceful* reason
   (empty, drifted, underutilized, and expired for pools written in the older dialects; not interruption,
   rotation, rebalance, manual or v1's forceful expiry) starts disrupting, the pool's nodes disrupting at
   its decision (all reasons, itself included) must not exceed what the pool's budgets allowed for that
   reason at that instant: the minimum `nodes` of the budgets that list the reason (or none) and whose
   schedule window was active (`core.disruption.budgets`), a percentage taken of the pool's initialized
   nodes and rounded up. Budgets are judged at the decision, as Karpenter does: a node someone deletes by
   hand after a decision does not make that decision a violation. When the cluster config changed
   (`config_published`), a decision is judged against the most permissive of the configs in force during the
   `CONFIG_LAG_S` before it. The functions re-read the config before every pass (tested to the pass in
   `tests/sim/test_config_change.py`); the rule stays generous (one invocation), since a re-read whose pool
   lists time out may take a while, and this rule is about budgets, not the re-read.
4. *Terminated with evictable pods.* When an instance is terminated (by Longshore, or reclaimed by EC2), every
   pod still bound to its node that the drain would have evicted (`core.drain.left_reason` is None), that is
   not already terminating, whose PDBs all allowed a disruption at that moment and that had no active
   do-not-disrupt, could have been evicted safely: each is a violation.
5. *Duplicate launches*: `note_launch` is called for every instance a CreateFleet launched; if another live
   instance already carries the same `karpenter.sh/nodeclaim` tag, the claim was launched twice.
6. *Pods that never ran*: at the end, pods that exist, are not being deleted, are not DaemonSet pods and were
   never Running, and have existed for `never_ran_grace_s` (10 min) or more.

7. *Unsafe terminations* (`availability.unsafe_terminations`): an instance Longshore terminated while a
   non-DaemonSet pod was still bound to its node, not terminating and not finished, unless the node's drain
   deadline had passed (the workflow deletes what is left at its deadline). Such a pod was neither evicted
   within its rules nor deleted at a deadline: the termination took it. Each such termination counts once.
8. *Voluntary unavailability* (`availability.voluntary_unavailable_pod_seconds`): a pod removed from a node
   that a *voluntary* disruption was taking away (reason empty, drifted, underutilized, expired or rotation)
   leaves a debt on its Deployment until a new pod of that Deployment starts Running. At every look, the
   Deployment's pods that are pending and that the scheduler has marked Unschedulable (it tried every node and
   none fits), up to the debt, had nowhere to run; the time to the next look is counted for each. Ordinary
   rescheduling (the replacement is bound at once to a node with room) counts nothing; a replacement waiting
   for a node still booting counts only once the scheduler says no node fits. Both figures are violations
   when non-zero.

Removals the scenario did not ask for that broke no rule are counted as pod disruptions, not violations.
The checker also records, for the report, when each node was first seen tainted and when its last pod left
(the instant the last non-DaemonSet pod on it started terminating or vanished).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from longshore.core import labels as wk
from longshore.core.disruption import budgets
from longshore.core.drain import drain_pod_from_manifest, left_reason, parse_timestamp
from longshore.core.model import ClusterConfig
from longshore_sim.kubeapi import disruption
from longshore_sim.kubeapi.meta import JSON, labels_of, metadata
from longshore_sim.kubeapi.selectors import selector_from_object
from longshore_sim.kubeapi.store import ObjectStore
from longshore_sim.manifest_reads import (
    is_daemon_pod,
    is_running,
    is_tainted,
    node_of,
    owner_deployment,
    pod_key,
    protection,
    unschedulable,
)

REASON_ANNOTATION = "longshore.io/disruption-reason"
INITIALIZED_LABEL = "karpenter.sh/initialized"
VOLUNTARY_REASONS = frozenset({"empty", "drifted", "underutilized", "expired", "rotation"})
CONFIG_LAG_S = 120.0  # how long a decision may be judged on an older config (generous: one invocation)
GRACEFUL_REASONS = {
    "empty": budgets.EMPTY,
    "drifted": budgets.DRIFTED,
    "underutilized": budgets.UNDERUTILIZED,
    "expired": budgets.EXPIRED,
}


@dataclass
class _Seen:
    annotations: dict[str, str]
    labels: dict[str, str]
    namespace: str
    deployment: str | None
    node: str | None
    created_at: float | None


@dataclass
class RuleChecker:
    """Watches a simulation for broken rules (see the module docstring)."""

    store: ObjectStore
    config: ClusterConfig
    never_ran_grace_s: float = 600.0
    origin: float = 0.0  # virtual epoch of the scenario's t=0 (violations are stamped relative to it)
    violations: list[str] = field(default_factory=list)
    disruptions: int = 0
    duplicate_launches: int = 0
    first_tainted: dict[str, float] = field(default_factory=dict)  # node -> scenario time first seen tainted
    last_pod_left: dict[str, float] = field(default_factory=dict)  # node -> scenario time its last pod left
    node_reasons: dict[str, str] = field(default_factory=dict)  # node -> disruption reason annotation
    max_disrupting: dict[str, int] = field(default_factory=dict)  # pool -> most nodes disrupting at once
    deadlines: dict[str, float] = field(default_factory=dict)  # node -> drain deadline (epoch)
    _running: dict[str, _Seen] = field(default_factory=dict)
    _pdb_allowed: dict[str, tuple[JSON, int]] = field(default_factory=dict)  # ns/name -> (pdb, allowed)
    _expected: set[str] = field(default_factory=set)  # namespace/deployment the scenario shrank or deleted
    _disrupting: dict[str, set[str]] = field(default_factory=dict)  # pool -> nodes seen disrupting
    _decided: dict[str, float] = field(default_factory=dict)  # node -> when its disruption was decided
    _configs: list[tuple[float, ClusterConfig]] = field(default_factory=list)  # (published at, config)
    _spans: dict[str, list[tuple[str, float, float | None]]] = field(
        default_factory=dict
    )  # pool -> (node, decided, ended or None) of every disruption seen
    _terminated_nodes: set[str] = field(default_factory=set)
    _pods_on_node: dict[str, int] = field(default_factory=dict)
    _first_seen: dict[str, float] = field(default_factory=dict)
    unsafe_terminations: int = 0
    voluntary_unavailable_pod_seconds: float = 0.0
    _debt: dict[str, int] = field(
        default_factory=dict
    )  # namespace/deployment -> voluntary evictions unreplaced
    _last_scan: float | None = None

    # -- what the scenario and the world tell the checker -----------------------------------------------------

    def expect_removals(self, namespace: str, deployment: str) -> None:
        """Pods of this Deployment may go away: the scenario scaled it down or deleted it."""
        self._expected.add(f"{namespace}/{deployment}")

    def note_deadline(self, node: str, deadline_epoch: float | None) -> None:
        """The workflow's Taint step fixed this node's drain deadline (None: it never forces)."""
        if deadline_epoch is not None:
            self.deadlines[node] = float(deadline_epoch)

    def note_decided(self, node: str, requested_at: float | None) -> None:
        """A workflow execution for this node was requested at `requested_at` (its input's `requestedAt`)."""
        if requested_at is not None:  # every step repeats it: keep the latest execution's
            self._decided[node] = max(self._decided.get(node, float(requested_at)), float(requested_at))

    def _t(self, now: float) -> str:
        return f"t={now - self.origin:.0f}s"

    # -- observations ---------------------------------------------------------------------------------------

    def scan(self, now: float) -> None:
        """Compare the cluster with the previous look (`now` is the virtual epoch)."""
        pods = self.store.view("pods")
        current: dict[str, JSON] = {pod_key(p): p for p in pods}
        for key in current:
            self._first_seen.setdefault(key, now)
        spent: dict[str, int] = {}
        for key, seen in list(self._running.items()):
            pod = current.get(key)
            if pod is not None and not metadata(pod).get("deletionTimestamp"):
                continue
            del self._running[key]
            self._judge_removal(key, seen, now, spent)
        for key, pod in current.items():
            if is_running(pod) and key not in self._running:
                owner = owner_deployment(pod)
                if owner is not None and self._debt.get(owner, 0) > 0:
                    self._debt[owner] -= 1  # a new pod of the Deployment runs: one eviction replaced
                meta = metadata(pod)
                self._running[key] = _Seen(
                    {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
                    labels_of(pod),
                    str(meta.get("namespace") or "default"),
                    owner_deployment(pod),
                    node_of(pod),
                    parse_timestamp(meta.get("creationTimestamp")),
                )
        self._pdb_allowed = {
            f"{metadata(pdb).get('namespace')}/{metadata(pdb).get('name')}": (
                pdb,
                int(disruption.compute_status(self.store, pdb).get("disruptionsAllowed", 0)),
            )
            for pdb in self.store.view("poddisruptionbudgets")
        }
        self._track_nodes(now, pods)
        self._count_unavailable(now, pods)

    def _count_unavailable(self, now: float, pods: list[JSON]) -> None:
        """Rule 8: pending-and-unschedulable pods of Deployments with a voluntary eviction unreplaced."""
        if self._last_scan is not None and now > self._last_scan and any(self._debt.values()):
            stuck: dict[str, int] = {}
            for pod in pods:
                owner = owner_deployment(pod)
                if owner is not None and self._debt.get(owner, 0) > 0 and unschedulable(pod):
                    stuck[owner] = stuck.get(owner, 0) + 1
            waiting = sum(min(count, self._debt[owner]) for owner, count in stuck.items())
            if waiting:
                if self.voluntary_unavailable_pod_seconds == 0.0:
                    self.violations.append(
                        f"{self._t(now)}: {waiting} pod(s) evicted by a voluntary disruption have nowhere to run"
                    )
                self.voluntary_unavailable_pod_seconds += waiting * (now - self._last_scan)
        self._last_scan = now

    def _judge_removal(self, key: str, seen: _Seen, now: float, spent: dict[str, int]) -> None:
        if seen.deployment is not None and seen.deployment in self._expected:
            return
        self.disruptions += 1
        if seen.deployment is not None and self.node_reasons.get(seen.node or "") in VOLUNTARY_REASONS:
            self._debt[seen.deployment] = self._debt.get(seen.deployment, 0) + 1
        if seen.node is not None and seen.node in self._terminated_nodes:
            return  # its instance went away: rule 4 judged the termination
        deadline = self.deadlines.get(seen.node or "")
        if deadline is not None and now >= deadline:
            return  # deleted at the drain deadline
        guard = protection(seen.annotations, seen.created_at, now)
        if guard is not None:
            self.violations.append(f"{self._t(now)}: pod {key} has {guard} but was disrupted")
        for name, (pdb, allowed) in self._pdb_allowed.items():
            if metadata(pdb).get("namespace") != seen.namespace:
                continue
            if not selector_from_object((pdb.get("spec") or {}).get("selector")).matches(seen.labels):
                continue
            spent[name] = spent.get(name, 0) + 1
            if spent[name] > allowed:
                self.violations.append(
                    f"{self._t(now)}: pod {key} was removed while PodDisruptionBudget {name} allowed "
                    f"{allowed} disruption(s)"
                )

    def _track_nodes(self, now: float, pods: list[JSON]) -> None:
        counts: dict[str, int] = {}
        for pod in pods:
            host = node_of(pod)
            if host is None or is_daemon_pod(pod) or metadata(pod).get("deletionTimestamp"):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            counts[host] = counts.get(host, 0) + 1
        nodes = self.store.view("nodes")
        for node in nodes:
            name = str(metadata(node).get("name"))
            if self._pods_on_node.get(name, 0) > 0 and counts.get(name, 0) == 0:
                self.last_pod_left[name] = now - self.origin
            if counts.get(name, 0) > 0:
                self.last_pod_left.pop(name, None)
            reason = (metadata(node).get("annotations") or {}).get(REASON_ANNOTATION)
            if reason:
                self.node_reasons[name] = str(reason)
            if is_tainted(node):
                self.first_tainted.setdefault(name, now - self.origin)
        self._pods_on_node = {
            str(metadata(n).get("name")): counts.get(str(metadata(n).get("name")), 0) for n in nodes
        }
        self._check_budgets(now, nodes)

    def _check_budgets(self, now: float, nodes: Iterable[Mapping[str, Any]]) -> None:
        per_pool: dict[str, list[Mapping[str, Any]]] = {}
        for node in nodes:
            pool = labels_of(node).get(wk.NODEPOOL)
            if pool is not None:
                per_pool.setdefault(pool, []).append(node)
        for pool_name, members in per_pool.items():
            disrupting = {
                str(metadata(n).get("name")): str(
                    (metadata(n).get("annotations") or {}).get(REASON_ANNOTATION) or ""
                )
                for n in members
                if metadata(n).get("deletionTimestamp") or is_tainted(n)
            }
            self.max_disrupting[pool_name] = max(self.max_disrupting.get(pool_name, 0), len(disrupting))
            before = self._disrupting.get(pool_name, set())
            self._disrupting[pool_name] = set(disrupting)
            spans = self._spans.setdefault(pool_name, [])
            for index, (name, decided, ended) in enumerate(spans):
                if ended is None and name not in disrupting:
                    spans[index] = (name, decided, now)
            started = [name for name in disrupting if name not in before]
            for name in started:
                previous = max((e or now for n, _, e in spans if n == name), default=-math.inf)
                decided = self._decided.get(name, now)
                spans.append((name, decided if previous <= decided <= now else now, None))
            initialized = sum(1 for n in members if labels_of(n).get(INITIALIZED_LABEL) == "true")
            reported: set[str] = set()  # one line per reason and look, as many nodes as it took
            for name in sorted(started):
                reason = disrupting[name]
                if reason in reported or not self._graceful(pool_name, reason):
                    continue
                decided = next(d for n, d, e in reversed(spans) if n == name)
                at_decision = sum(1 for _, d, e in spans if d <= decided and (e is None or e > decided))
                allowed = self._allowed(pool_name, GRACEFUL_REASONS[reason], initialized, decided)
                if allowed is not None and at_decision > allowed:
                    reported.add(reason)
                    self.violations.append(
                        f"{self._t(decided)}: {at_decision} node(s) of pool {pool_name} disrupting at once "
                        f"({reason} among them); its budgets allow {allowed} for {GRACEFUL_REASONS[reason]}"
                    )

    def _graceful(self, pool_name: str, reason: str) -> bool:
        if reason not in GRACEFUL_REASONS:
            return False
        if reason == "expired":
            try:
                return not self.config.pool(pool_name).expiry.forceful
            except KeyError:
                return False
        return True

    def config_published(self, at: float, config: ClusterConfig) -> None:
        """A changed cluster config was published at `at` (virtual epoch); decisions are judged against the
        configs a function could have been running on then."""
        if not self._configs:
            self._configs.append((-math.inf, self.config))
        self._configs.append((at, config))
        self.config = config

    def _configs_at(self, decided: float) -> list[ClusterConfig]:
        """The configs a decision at `decided` may have been made with: any in force during the `CONFIG_LAG_S`
        before it."""
        if not self._configs:
            return [self.config]
        since = decided - CONFIG_LAG_S
        return [
            config
            for index, (at, config) in enumerate(self._configs)
            if at <= decided and (index + 1 == len(self._configs) or self._configs[index + 1][0] > since)
        ]

    def _allowed(self, pool_name: str, reason: str, node_count: int, now: float) -> int | None:
        """The most any config in force at the decision allowed (None: one of them set no limit)."""
        allowed = [self._allowed_by(c, pool_name, reason, node_count, now) for c in self._configs_at(now)]
        return None if not allowed or None in allowed else max(a for a in allowed if a is not None)

    def _allowed_by(
        self, config: ClusterConfig, pool_name: str, reason: str, node_count: int, now: float
    ) -> int | None:
        try:
            pool = config.pool(pool_name)
        except KeyError:
            return None
        caps: list[int] = []
        for budget in pool.disruption.budgets:
            if budget.reasons and reason not in budget.reasons:
                continue
            active = budgets.is_active(budget, now)
            if active is None:
                caps.append(0)
            elif active:
                text = budget.nodes.strip()
                caps.append(
                    math.ceil(node_count * float(text[:-1]) / 100) if text.endswith("%") else int(text)
                )
        return min(caps) if caps else None

    # -- terminations ---------------------------------------------------------------------------------------

    def note_termination(self, node_name: str | None, instance_id: str, now: float, by: str) -> None:
        """An instance was terminated (`by`: "longshore" or "EC2 reclaim"): judge the pods still on its node."""
        if node_name is None:
            return
        self._terminated_nodes.add(node_name)
        if by == "by Longshore":
            self._judge_unsafe(node_name, instance_id, now)
        pdbs = {
            f"{metadata(p).get('namespace')}/{metadata(p).get('name')}": p
            for p in self.store.view("poddisruptionbudgets")
        }
        allowed = {
            name: int(disruption.compute_status(self.store, pdb).get("disruptionsAllowed", 0))
            for name, pdb in pdbs.items()
        }
        for pod in self.store.view("pods"):
            if node_of(pod) != node_name or metadata(pod).get("deletionTimestamp"):
                continue
            if left_reason(drain_pod_from_manifest(pod), now) is not None:
                continue
            meta = metadata(pod)
            annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
            if protection(annotations, parse_timestamp(meta.get("creationTimestamp")), now) is not None:
                continue
            covering = [
                name
                for name, pdb in pdbs.items()
                if metadata(pdb).get("namespace") == (meta.get("namespace") or "default")
                and selector_from_object((pdb.get("spec") or {}).get("selector")).matches(labels_of(pod))
            ]
            if any(allowed.get(name, 0) <= 0 for name in covering) or len(covering) > 1:
                continue
            self.violations.append(
                f"{self._t(now)}: instance {instance_id} (node {node_name}) was terminated ({by}) while pod "
                f"{pod_key(pod)} on it could still have been evicted"
            )

    def _judge_unsafe(self, node_name: str, instance_id: str, now: float) -> None:
        """Rule 7: a Longshore termination that took pods with it (before the node's drain deadline)."""
        deadline = self.deadlines.get(node_name)
        if deadline is not None and now >= deadline:
            return
        left = [
            pod_key(p)
            for p in self.store.view("pods")
            if node_of(p) == node_name
            and not is_daemon_pod(p)
            and not metadata(p).get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        if left:
            self.unsafe_terminations += 1
            self.violations.append(
                f"{self._t(now)}: instance {instance_id} (node {node_name}) was terminated by Longshore while "
                f"{len(left)} pod(s) were still on it ({', '.join(left[:3])})"
            )

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
            and not is_daemon_pod(p)
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
