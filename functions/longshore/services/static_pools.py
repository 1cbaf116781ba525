"""The provisioner's static NodePools step: launch the missing nodes, remove the extras (`core.static_pools`).

Theory of operation: after the lifecycle step of each provisioner pass, `StaticPools.reconcile` reads the
pools that set `replicas`, joins their claims with their Nodes and asks `core.static_pools.plan` what to do.

- A launch asks the packing engine for the cheapest claim of that pool alone for one placeholder pod (no
  requests but a pod slot, tolerating every taint, pinned to the pool), so requirements, DaemonSet overhead and
  unavailable offerings count as for any claim; the claim records no pods (`claim_id_for(pool, (), generation)`
  with the pass time and the slot in the generation, so a retried pass sees the first launch as a claim).
- A removal first marks the claim durably (`removal_started_at`, compare-and-put on the claim record), then
  starts the disruption workflow (reason `static-scale-down`, the pool's `terminationGracePeriod` as the
  deadline). A marked claim counts as going for `REMOVAL_MEMORY_S` or until its taint shows, in every
  provisioner that reads it, a cold one too, so no pass removes another node while the workflow has not
  tainted the first yet. A mark that loses its compare-and-put (someone changed the claim) starts nothing;
  the next pass decides again on the fresh record. A workflow that never starts after the mark leaves the
  node counted as going until the mark is `REMOVAL_MEMORY_S` old, then it is chosen again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim
from longshore.core.commands import DisruptionCommand, DisruptionReason
from longshore.core.drain import DISRUPTED_TAINT_KEY, DO_NOT_DISRUPT
from longshore.core.model import ClusterConfig, NodePool
from longshore.core.pods import Pod
from longshore.core.resources import Resources
from longshore.core.scheduling import SchedulingInput, solve
from longshore.core.static_pools import StaticMember, StaticPlan, plan, static_pools
from longshore.core.taints import Toleration
from longshore.ports.cloud import Launcher
from longshore.ports.kube import Cluster, Manifest
from longshore.ports.metrics import MetricsSink
from longshore.ports.store import ClaimStore, OfferingAvailability
from longshore.ports.workflow import DisruptionWorkflow
from longshore.services import snapshot
from longshore.services.launch_requests import launch_request

log = logging.getLogger(__name__)

REMOVAL_MEMORY_S: Final = 10 * 60.0
PLACEHOLDER_NAMESPACE: Final = "longshore-static"


@dataclass(frozen=True, slots=True)
class StaticOutcome:
    plans: tuple[StaticPlan, ...] = ()
    launched: tuple[str, ...] = ()  # claim ids
    removing: tuple[str, ...] = ()  # node names whose removal started


class StaticPools:
    """Keeps every static pool at its `replicas` (see the module docstring)."""

    def __init__(
        self,
        config: ClusterConfig,
        cluster: Cluster,
        launcher: Launcher,
        offerings: OfferingAvailability,
        catalog: Callable[[], Catalog],
        metrics: MetricsSink,
        workflow: DisruptionWorkflow | None,
        *,
        store: ClaimStore,
    ) -> None:
        self._config = config
        self._store = store
        self._cluster = cluster
        self._launcher = launcher
        self._offerings = offerings
        self._catalog = catalog
        self._metrics = metrics
        self._workflow = workflow

    def reconcile(self, claims: Sequence[NodeClaim], now: float) -> StaticOutcome:
        pools = static_pools(self._config.node_pools)
        if not pools:
            return StaticOutcome()
        nodes = {str((n.get("metadata") or {}).get("name")): n for n in self._cluster.list_nodes()}
        plans, launched, removing = [], [], []
        pods: Mapping[str, tuple[int, bool]] | None = None
        for name, pool in sorted(pools.items()):
            mine = [c for c in claims if c.nodepool == name]
            result = plan(pool, [self._member(c, nodes, {}, now) for c in mine])
            if result.remove:
                pods = pods if pods is not None else self._pods_by_node()
                result = plan(pool, [self._member(c, nodes, pods, now) for c in mine])
            plans.append(result)
            if result.launch:
                launched.extend(self._launch(pool, result.launch, now))
            for member in result.remove:
                claim = next(c for c in mine if c.id == member.claim_id)
                if self._remove(pool, claim, member, now):
                    removing.append(member.node or "")
            if result.launch or result.remove or result.held:
                log.info(
                    "static nodepool",
                    extra={
                        "nodepool": name,
                        "replicas": result.replicas,
                        "active": result.active,
                        "launch": result.launch,
                        "remove": [m.node for m in result.remove],
                        "held": result.held,
                    },
                )
        return StaticOutcome(tuple(plans), tuple(launched), tuple(removing))

    # -- reading ----------------------------------------------------------------------------------------------
    def _member(
        self,
        claim: NodeClaim,
        nodes: Mapping[str, Manifest],
        pods: Mapping[str, tuple[int, bool]],
        now: float,
    ) -> StaticMember:
        node = nodes.get(claim.node_name or "")
        name = claim.node_name if node is not None else None
        marked = claim.removal_started_at is not None and now - claim.removal_started_at < REMOVAL_MEMORY_S
        going = claim.state == "deleting" or (name is not None and marked)
        if node is not None:
            meta = node.get("metadata") or {}
            going = going or meta.get("deletionTimestamp") is not None
            going = going or any(t.key == DISRUPTED_TAINT_KEY for t in snapshot.node_taints(node))
        count, protected = pods.get(name or "", (0, False))
        return StaticMember(claim.id, name, claim.created_at, going, count, protected)

    def _pods_by_node(self) -> dict[str, tuple[int, bool]]:
        """Node -> (reschedulable pods, whether one has `do-not-disrupt`)."""
        found: dict[str, tuple[int, bool]] = {}
        for pod in self._cluster.list_pods():
            spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
            node = str(spec.get("nodeName") or "")
            owners = meta.get("ownerReferences") or ()
            phase = (pod.get("status") or {}).get("phase")
            if (
                not node
                or phase in ("Succeeded", "Failed")
                or any(o.get("kind") == "DaemonSet" for o in owners)
            ):
                continue
            count, protected = found.get(node, (0, False))
            guarded = str((meta.get("annotations") or {}).get(DO_NOT_DISRUPT, "")).lower() == "true"
            found[node] = (count + 1, protected or guarded)
        return found

    # -- acting -----------------------------------------------------------------------------------------------
    def _launch(self, pool: NodePool, count: int, now: float) -> list[str]:
        catalog = self._catalog()
        daemonsets, _ = snapshot.daemonset_pods(self._cluster.list_daemonsets())
        placeholder = Pod(
            namespace=PLACEHOLDER_NAMESPACE,
            name=pool.name,
            requests=Resources.of({"pods": 1}),
            node_selector=((wk.NODEPOOL, pool.name),),
            tolerations=(Toleration(operator="Exists"),),
            unschedulable=True,
        )
        solved = solve(
            SchedulingInput(
                pods=(placeholder,),
                pools=(pool,),
                node_classes=self._config.node_classes,
                catalog=catalog,
                daemonsets=daemonsets,
                unavailable=self._offerings.unavailable(now),
                settings=self._config.settings,
            )
        )
        if not solved.new_claims:
            why = "; ".join(reason for _, reason in solved.unschedulable) or "no offering"
            log.warning("static nodepool cannot launch", extra={"nodepool": pool.name, "why": why})
            return []
        claim_plan = replace(solved.new_claims[0], pods=())
        launched: list[str] = []
        for slot in range(count):
            request = launch_request(
                claim_plan, catalog, self._config, now, generation=f"static-{now:.3f}-{slot}"
            )
            result = self._launcher.launch(request, now)
            for point in result.metrics:
                self._metrics.emit(point.name, point.value, "Count", dict(point.dimensions))
            if result.status != "failed":
                launched.append(result.claim_id)
        return launched

    def _remove(self, pool: NodePool, claim: NodeClaim, member: StaticMember, now: float) -> bool:
        if self._workflow is None or member.node is None or not claim.instance_id:
            return False  # not registered yet: removed once it is (or by the lifecycle's timeouts)
        grace = pool.termination_grace_period_seconds
        command = DisruptionCommand(
            instance_id=claim.instance_id,
            reason=DisruptionReason.STATIC_SCALE_DOWN,
            node_name=member.node,
            claim_id=claim.id,
            deadline_epoch=now + grace if grace is not None else None,
            requested_at=now,
        )
        if self._store.compare_and_put(replace(claim, removal_started_at=now)) is None:
            log.info(
                "static nodepool scale-down: the claim changed; deciding again", extra={"claim": claim.id}
            )
            return False
        result = self._workflow.start(command)
        log.info(
            "static nodepool scale-down", extra={"node": member.node, "execution": result.execution_name}
        )
        return True
