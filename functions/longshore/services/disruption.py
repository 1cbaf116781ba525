"""The disruption planner service: snapshot the cluster, plan with the pure core, start workflows, explain.

Theory of operation. `DisruptionService.run_pass()` is one loop of Karpenter's disruption controller, written
against ports only:

1. *Snapshot* (`disruption_snapshot.take_snapshot`, also used by `longshore explain`): nodes joined with their
   claims, pods, PDBs, DaemonSets, in-flight claims, the ICE cache and current AMIs; nodes this service started
   a workflow for count as disrupting, replacements it launched as nominated; each node's last pod event comes
   from `pod_events.PodEventTracker` (the `consolidateAfter` clock).
2. *Re-validate* the pending consolidation decision once its 15 s have passed, on this fresh snapshot
   (`planner.revalidate`: still candidates, budgets, still a saving); act on it or drop it with its reason.
3. *Plan* (`core.disruption.planner.plan`) and act: emptiness, expiry and drift at once; a consolidation
   decision is kept pending (one at a time) until it re-validates.
4. *Act*: one `DisruptionWorkflow` execution per node (`DisruptionCommand` with the reason, the pool's
   `terminationGracePeriod` as `deadline_epoch`). Replacements come first: the service launches the
   decision's planned replacement claims itself (`Launcher`, ids deterministic from the plan, so a retried
   pass launches nothing twice). With one replacement, every node's execution is started at once with
   `replace=true` and the replacement's claim in its input (`SurgeWorkflow.start_surge`), so the workflow
   waits until that claim is initialized before tainting. With several, the service waits until all of them
   are initialized and only then starts the executions (`staged_surges`: when a staged surge is ready or
   abandoned, and how a cold container rebuilds it from the claims). A replacement that cannot be launched abandons the
   decision before anything is touched.
5. *Explain*: every decision is logged with its reason and $/h saved, every node passed over with its
   reason (debug), and the same reasons are posted as Events on the nodes (`disruption_events`), with
   Karpenter's `ConsolidationCandidate` / `ConsolidationApproved` when a consolidation decision is made and
   `ConsolidationRejected` when it fails re-validation or a move is judged not worth its disruption.
6. *Measure*: `DisruptionDecisions{Reason}` per decision acted on, `ConsolidationSavingsPerHour{Reason}`,
   `NodeRepairBlocked{NodePool}`. (Nodes disrupted, drain duration and PDB-blocked evictions are counted by
   the workflow steps, where they happen; the pools' cost per hour by the provisioner, which owns the claims.)

An invocation's loop of passes is `disruption_invocation.run_invocation` (some of its names are re-exported here).

What the service remembers between passes (pending decision, started nodes, launched replacements, pod
events) lives in memory: the Lambda loops passes every 10 s for most of its timeout, so a pending decision
usually validates within one invocation. What a cold container must not forget is durable. The
`consolidateAfter` clock: each pass writes a node's last pod event time, and whether it had pods, to its claim
when they moved (compare-and-put), and a tracker that has not seen a node starts from there (pods the claim
says were there and are gone left "now"). Surges under way: a replacement claim records the nodes it
`replaces`, so for `STARTED_TTL_S` after its launch every pass treats those nodes as disrupting and the
claim's node as nominated, whichever container runs it (otherwise a cold pass would decide the same node
again, count the replacement as free room and drain before it is up). A staged
multi-replacement decision lost with its container is not restarted; its nodes are left alone until the
claims age out, and consolidation removes the unused replacements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from longshore.core import telemetry
from longshore.core.catalog import Catalog
from longshore.core.claims import LaunchRequest
from longshore.core.commands import DisruptionCommand, DisruptionReason
from longshore.core.disruption import planner
from longshore.core.disruption.decisions import Decision, DisruptionPlan
from longshore.core.disruption.drift import claim_hashes
from longshore.core.disruption.state import DisruptionInput, ManagedNode
from longshore.core.model import ClusterConfig
from longshore.ports.clock import Clock
from longshore.ports.cloud import InstanceStatuses, Launcher, PlacementGroups
from longshore.ports.karpenter import ClaimConditions
from longshore.ports.kube import Cluster
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, Lease, OfferingAvailability
from longshore.ports.workflow import DisruptionWorkflow, StartResult
from longshore.services import staged_surges
from longshore.services.disruption_events import NodeEvents
from longshore.services.disruption_events import event_reason_for as event_reason_for
from longshore.services.disruption_invocation import PASS_INTERVAL_S as PASS_INTERVAL_S
from longshore.services.disruption_invocation import next_pass_at as next_pass_at
from longshore.services.disruption_snapshot import REPLACEMENT_TIMEOUT_S as REPLACEMENT_TIMEOUT_S
from longshore.services.disruption_snapshot import STARTED_TTL_S as STARTED_TTL_S
from longshore.services.disruption_snapshot import ImageResolver, Snapshot, take_snapshot
from longshore.services.launch_requests import launch_request
from longshore.services.pod_events import PodEventTracker
from longshore.services.staged_surges import StagedSurge as StagedSurge


class Log(Protocol):
    """The logging calls the service makes (`logging.Logger` and Powertools' `Logger` both fit)."""

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def info(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> Any: ...


class SurgeWorkflow(DisruptionWorkflow, Protocol):
    def start_surge(
        self, command: DisruptionCommand, replacement_claim_id: str, give_up_at: float | None
    ) -> StartResult:
        """Start `command` (replace=true) with its replacement already launched as `replacement_claim_id`:
        the execution waits until that claim is initialized (or `give_up_at`) before tainting."""
        ...


# -- the service --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Started:
    """A disruption this service started (or staged), remembered until its node visibly disrupts or goes."""

    node: str
    execution_name: str
    reason: DisruptionReason
    at: float


@dataclass(frozen=True, slots=True)
class Acted:
    """What became of one decision this pass."""

    decision: Decision
    outcome: str  # "started" | "staged" | "abandoned"
    executions: tuple[StartResult, ...] = ()
    replacement_claims: tuple[str, ...] = ()
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PassReport:
    now: float
    plan: DisruptionPlan
    acted: tuple[Acted, ...]
    pending: Decision | None
    dropped: tuple[tuple[Decision, str], ...] = ()  # consolidation that failed re-validation, and why
    events: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "acted": [
                {
                    "reason": a.decision.reason,
                    "nodes": list(a.decision.node_names),
                    "outcome": a.outcome,
                    "executions": [r.execution_name for r in a.executions if r.started],
                    "replacements": list(a.replacement_claims),
                    "detail": a.detail,
                    "savingsPerHour": a.decision.savings_per_hour,
                }
                for a in self.acted
            ],
            "pending": list(self.pending.node_names) if self.pending else None,
            "dropped": [{"nodes": list(d.node_names), "why": why} for d, why in self.dropped],
            "passedOver": len(self.plan.passed_over),
            "events": self.events,
        }


@dataclass(frozen=True)
class PlannerPorts:
    cluster: Cluster
    claims: ClaimStore
    offerings: OfferingAvailability
    workflow: SurgeWorkflow
    launcher: Launcher
    clock: Clock
    metrics: MetricsSink
    images: ImageResolver | None = None
    lease: Lease | None = None  # with an owner in `run_invocation`: one invocation decides at a time
    conditions: ClaimConditions | None = None  # NodeClaim conditions after each pass (claim_conditions)
    instance_statuses: InstanceStatuses | None = None  # EC2 status checks, for node auto-repair
    placement_groups: PlacementGroups | None = None  # partitions as offerings (`services.placement_groups`)


class DisruptionService:
    """Runs planner passes against the ports (see the module docstring)."""

    def __init__(
        self,
        config: ClusterConfig,
        catalog: Catalog | Callable[[], Catalog],
        ports: PlannerPorts,
        log: Log,
    ) -> None:
        self.config = config
        self._catalog = catalog
        self.ports = ports
        self.log = log
        self.pending: Decision | None = None
        self.started: dict[str, Started] = {}
        self.staged: list[StagedSurge] = []
        self._surges_started: set[str] = set()  # replacement claims of staged surges this container started
        self.replacement_claims: dict[str, float] = {}  # claim id -> launched at
        self.pod_events = PodEventTracker()
        self.events = NodeEvents(ports.cluster)

    def take_over(self, previous: DisruptionService) -> None:
        """Continue from `previous` (the same container's planner before the config changed): its pending
        decision (re-validated on this config), started and staged disruptions, replacements, pod events."""
        self.pending, self.started, self.staged = previous.pending, previous.started, previous.staged
        self._surges_started, self.replacement_claims = previous._surges_started, previous.replacement_claims
        self.pod_events = previous.pod_events

    # -- one pass -------------------------------------------------------------------------------------------
    def catalog(self) -> Catalog:
        return self._catalog if isinstance(self._catalog, Catalog) else self._catalog()

    def snapshot(self) -> Snapshot:
        now = self.ports.clock.now()
        current = take_snapshot(
            self.ports.cluster,
            self.ports.claims,
            self.ports.offerings,
            self.catalog(),
            self.config,
            now,
            images=self.ports.images,
            pod_events=self.pod_events,
            started=self.started,
            replacements=self.replacement_claims,
            instance_statuses=self.ports.instance_statuses,
            placement_groups=self.ports.placement_groups,
        )
        self._forget(current, now)
        return current

    def run_pass(self) -> PassReport:
        """Snapshot, re-validate, plan, act, explain (one disruption controller loop)."""
        current = self.snapshot()
        now = current.input.now
        self._record_pod_events(current)
        acted: list[Acted] = []
        dropped: list[tuple[Decision, str]] = []
        acted.extend(self._progress_staged(current, now))
        if (
            self.pending is not None
            and self.pending.validate_after is not None
            and now >= self.pending.validate_after
        ):
            decision, self.pending = self.pending, None
            verdict = planner.revalidate(decision, current.input)
            if isinstance(verdict, Decision):
                acted.append(self._act(verdict, current, now))
            else:
                dropped.append((decision, verdict))
                self.log.info(
                    "consolidation abandoned on re-validation",
                    extra={"nodes": list(decision.node_names), "why": verdict},
                )
        inp = self._with_started(current.input)
        plan = planner.plan(inp)
        candidate: Decision | None = None
        for decision in plan.decisions:
            if decision.reason == DisruptionReason.UNDERUTILIZED:
                if self.pending is None:
                    self.pending = candidate = decision
                    self.log.info(
                        "consolidation decision; acting after re-validation",
                        extra={
                            "nodes": list(decision.node_names),
                            "explanation": decision.explanation,
                            "savings_per_hour": decision.savings_per_hour,
                            "validate_after": decision.validate_after,
                        },
                    )
                continue
            acted.append(self._act(decision, current, now))
        for held in plan.repair_blocked:  # repair held off: over 20 % of the pool unhealthy (alarmed)
            dims = {telemetry.DIM_NODEPOOL: held.pool}
            self.ports.metrics.emit(telemetry.NODE_REPAIR_BLOCKED, float(held.unhealthy), "Count", dims)
        if self.ports.conditions is not None:  # Drifted, Consolidatable, Disrupting (core.disruption)
            self.ports.conditions.publish(current.claims, inp, {n: s.reason for n, s in self.started.items()})
        events = self._explain(plan, dropped, current, now, candidate)
        return PassReport(now, plan, tuple(acted), self.pending, tuple(dropped), events)

    def _record_pod_events(self, current: Snapshot) -> None:
        """Write each node's consolidateAfter clock to its claim when it moved (see `PodEventTracker.observe`).

        A claim changed by someone else since the snapshot is left for the next pass (compare-and-put).
        """
        claims = {c.id: c for c in current.claims}
        for node in current.input.nodes:
            claim = claims.get(node.claim_id or "")
            if claim is None:
                continue
            had_pods = self.pod_events.has_pods(node.name)
            if (claim.last_pod_event_at, claim.had_pods) != (node.last_pod_event_at, had_pods):
                self.ports.claims.compare_and_put(
                    replace(claim, last_pod_event_at=node.last_pod_event_at, had_pods=had_pods)
                )

    # -- acting ---------------------------------------------------------------------------------------------
    def _with_started(self, inp: DisruptionInput) -> DisruptionInput:
        if not self.started:
            return inp
        nodes = tuple(
            replace(n, disrupting=True) if n.name in self.started and not n.disrupting else n
            for n in inp.nodes
        )
        return replace(inp, nodes=nodes)

    def _command(
        self, node: ManagedNode, reason: DisruptionReason, now: float, *, replace_first: bool
    ) -> DisruptionCommand:
        pool = next((p for p in self.config.node_pools if p.name == node.nodepool), None)
        grace = pool.termination_grace_period_seconds if pool is not None else None
        if replace_first:
            # A surge waits for its replacement before tainting: the Taint step starts the pool's
            # terminationGracePeriod then (as Karpenter does), so the wait does not eat into the drain.
            grace = None
        return DisruptionCommand(
            instance_id=node.instance_id,
            reason=reason,
            node_name=node.name,
            claim_id=node.claim_id,
            replace=replace_first,
            deadline_epoch=now + grace if grace is not None else None,
            requested_at=now,
        )

    def _act(self, decision: Decision, current: Snapshot, now: float) -> Acted:
        self.log.info(
            "disruption decision",
            extra={
                "reason": decision.reason,
                "nodes": list(decision.node_names),
                "explanation": decision.explanation,
                "savings_per_hour": decision.savings_per_hour,
                "forceful": decision.forceful,
                "replacements": [
                    f"{c.instance_type}/{c.capacity_type}/{c.zone}" for c in decision.replacements
                ],
            },
        )
        dims = {telemetry.DIM_REASON: decision.reason}
        claim_ids: list[str] = []
        catalog = current.input.catalog
        generation = "replace-" + "-".join(sorted(decision.node_names))
        for claim_plan in decision.replacements:
            request = self._with_hashes(launch_request(claim_plan, catalog, self.config, now, generation))
            request = replace(
                request,
                claim=replace(request.claim, replaces=decision.node_names, disruption_reason=decision.reason),
            )
            result = self.ports.launcher.launch(request, now)
            if result.status == "failed":
                why = f"replacement {claim_plan.instance_type} could not be launched: {result.reason or 'no capacity'}"
                self.log.warning(
                    "disruption abandoned", extra={"nodes": list(decision.node_names), "why": why}
                )
                for node in decision.nodes:
                    self.events.post(
                        current.node_manifests,
                        node.name,
                        "DisruptionBlocked",
                        f"{decision.reason}: {why}",
                        now,
                        warning=True,
                    )
                return Acted(decision, "abandoned", replacement_claims=tuple(claim_ids), detail=why)
            claim_ids.append(result.claim_id)
            self.replacement_claims[result.claim_id] = now
        self.ports.metrics.emit(telemetry.DISRUPTION_DECISIONS, 1.0, "Count", dims)
        if decision.savings_per_hour > 0:
            self.ports.metrics.emit(telemetry.SAVINGS_PER_HOUR, decision.savings_per_hour, "None", dims)
        if len(claim_ids) > 1:
            self.staged.append(StagedSurge(decision, tuple(sorted(claim_ids)), now))
            for node in decision.nodes:
                self.started[node.name] = Started(node.name, "", decision.reason, now)
            return Acted(
                decision,
                "staged",
                replacement_claims=tuple(claim_ids),
                detail="waiting for every replacement to be initialized",
            )
        results = self._start_all(decision, current, now, claim_ids[0] if claim_ids else None)
        return Acted(decision, "started", results, tuple(claim_ids))

    def _with_hashes(self, request: LaunchRequest) -> LaunchRequest:
        """The claim records the pool and node-class hashes it is built from (drift detection later)."""
        try:
            pool = self.config.pool(request.claim.nodepool)
            pool_hash, class_hash = claim_hashes(pool, self.config.node_class_of(pool))
        except KeyError:
            return request
        claim = replace(request.claim, nodepool_hash=pool_hash, nodeclass_hash=class_hash)
        return replace(request, claim=claim)

    def _start_all(
        self,
        decision: Decision,
        current: Snapshot,
        now: float,
        replacement: str | None,
        decided_at: float | None = None,
    ) -> tuple[StartResult, ...]:
        results: list[StartResult] = []
        for node in decision.nodes:
            command = self._command(node, decision.reason, now, replace_first=replacement is not None)
            if decided_at is not None:  # the decision's time names the execution: a restart finds the same
                command = replace(command, requested_at=decided_at)
            if decision.deadline is not None:  # e.g. a repair ahead of a scheduled EC2 event
                deadline = min(decision.deadline, command.deadline_epoch or decision.deadline)
                command = replace(command, deadline_epoch=deadline)
            if replacement is None:
                result = self.ports.workflow.start(command)
            else:
                result = self.ports.workflow.start_surge(command, replacement, now + REPLACEMENT_TIMEOUT_S)
            results.append(result)
            self.started[node.name] = Started(node.name, result.execution_name, decision.reason, now)
            if result.started:
                self.events.post(
                    current.node_manifests,
                    node.name,
                    "Disrupting",
                    f"Disrupting node: {decision.reason}: {decision.explanation}",
                    now,
                )
        return tuple(results)

    def _recover_staged(self, current: Snapshot, now: float) -> None:
        """Surges with several replacements that an earlier container staged, rebuilt from their claims: the
        claims launched together (same `replaces`, same creation) name the nodes and the reason. A start this
        container repeats is harmless: the execution's name comes from the decision's time."""
        self._surges_started &= {c.id for c in current.claims}  # forget claims that are gone
        known = {claim_id for s in self.staged for claim_id in s.claim_ids} | self._surges_started
        for surge in staged_surges.recovered(current, now, known):
            self.staged.append(surge)
            for node in surge.decision.nodes:
                self.started.setdefault(node.name, Started(node.name, "", surge.decision.reason, surge.at))

    def _progress_staged(self, current: Snapshot, now: float) -> list[Acted]:
        self._recover_staged(current, now)
        acted: list[Acted] = []
        waiting: list[StagedSurge] = []
        claims = {c.id: c for c in current.claims}
        for staged in self.staged:
            state, why = staged_surges.progress(staged, claims, now)
            if state == "abandoned":
                for node in staged.decision.nodes:
                    self.started.pop(node.name, None)
                self.log.warning(
                    "disruption abandoned", extra={"nodes": list(staged.decision.node_names), "why": why}
                )
                acted.append(
                    Acted(staged.decision, "abandoned", replacement_claims=staged.claim_ids, detail=why)
                )
            elif state == "ready":
                fresh = tuple(
                    n for n in (current.managed(x.name) for x in staged.decision.nodes) if n is not None
                )
                decision = replace(staged.decision, nodes=fresh)
                results = self._start_all(decision, current, now, staged.claim_ids[0], decided_at=staged.at)
                self._surges_started.update(staged.claim_ids)
                acted.append(Acted(decision, "started", results, staged.claim_ids))
            else:
                waiting.append(staged)
        self.staged = waiting
        return acted

    def _forget(self, current: Snapshot, now: float) -> None:
        """Drop memories of nodes that are gone, or whose start never became visible."""
        for name, started in list(self.started.items()):
            node = current.managed(name)
            staged = any(name in s.decision.node_names for s in self.staged)
            if node is None or (
                not staged and now - started.at > STARTED_TTL_S and not staged_surges.tainted(node)
            ):
                del self.started[name]
        live = {c.id for c in current.claims}
        for claim_id, at in list(self.replacement_claims.items()):
            if claim_id not in live or now - at > STARTED_TTL_S + REPLACEMENT_TIMEOUT_S:
                del self.replacement_claims[claim_id]

    # -- explaining -----------------------------------------------------------------------------------------
    def _explain(
        self,
        plan: DisruptionPlan,
        dropped: Sequence[tuple[Decision, str]],
        current: Snapshot,
        now: float,
        candidate: Decision | None = None,
    ) -> int:
        for skipped in plan.passed_over:
            self.log.debug("node passed over", extra={"node": skipped.node, "why": skipped.reason})
        return self.events.explain(plan, dropped, current.node_manifests, current.unreadable, now, candidate)
