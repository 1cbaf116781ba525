"""`longshore explain (NODE | POD) --config CLUSTER`: why a node is not being disrupted, or why a pod is pending.

Theory of operation: the command takes the same snapshot the planner Lambda takes
(`services.disruption_snapshot.take_snapshot`: nodes, pods, PDBs and DaemonSets through the Cluster port on
the real kubernetes client, claims from the claim store or the cluster's NodeClaims) and asks the same pure code, so its answer is the
one the Lambda acts on:

- a NODE: `core.disruption.planner.plan` gives either the decision that includes it (reason, replacements,
  $/h saved; a consolidation is carried out after a 15 s re-validation) or the reason it was passed over
  (budget, PDB, do-not-disrupt, not initialized, no cheaper option...); `left-alone` when a move exists but
  is not worth its disruption (a `Balanced` pool's score, or the pool's
  `longshore.io/consolidation-min-savings`). Nodes this cluster does not own are said to be so, and the
  pool's budgets are shown for every reason.
- a NODE with `--what-if-removed` (`cli.what_if`): where each of its pods would go if the node were removed
  now (a node that exists, or a node the provisioner would launch, with its type and $/h), what that costs or
  saves per hour, and what would block a graceful removal (do-not-disrupt, a PodDisruptionBudget, the pool's budget). Nothing
  is decided or written: it answers the question a consolidation would ask about this one node.
- a POD (`NAMESPACE/NAME`, or a name found in one namespace): where it runs, or, when it is pending, what
  the packing engine (`core.scheduling.solve`) does with it: the node or in-flight claim it fits, the node
  it would launch, or the engine's reason it fits nowhere (requirements, taints, pool limits...).

The cluster is reached with `--kubeconfig` (default: the usual kubeconfig) or `--server URL` (plus
`--token`); the claims come from the DynamoDB table (`--table`, the production adapter, so
`AWS_ENDPOINT_URL` can point it at moto), from a JSON file (`--claims`, a list of claim documents as the
store keeps them) or, with neither, from the cluster's NodeClaim objects (as `longshore status` reads them). Prices come from the offline catalog (EC2 shapes shipped as package data, the shipped price
table) unless `--live` asks AWS. The node classes' placement groups are looked up as the planner looks them
up (`cli.placement_groups`): from `--placement-groups FILE`, else from EC2 with `--live`, else not at all (the
partition key open); a class whose lookup fails is refused replacements by the planner this pass, and the
answer names the failure (a node's details, a pending pod's launch). `--now EPOCH` evaluates at another time
(reproducible output); `--json` prints `{"kind", "name", "verdict", "reason", "details"}`. Exit status: 0 with an answer, 1 when the object
does not exist, 2 for bad options or configuration.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from longshore.cli.options import config_options, load_from_options
from longshore.cli.placement_groups import (
    launch_note,
    placement_groups_option,
    placement_groups_port,
    unresolved_lines,
)
from longshore.core.catalog import Catalog
from longshore.core.claims import NodeClaim
from longshore.core.commands import DisruptionReason
from longshore.core.disruption import budgets, planner
from longshore.core.disruption.decisions import PassedOverKind
from longshore.core.model import ClusterConfig
from longshore.core.scheduling import SchedulingInput, solve
from longshore.ports.store import ClaimStore

F = TypeVar("F", bound=Callable[..., Any])
NOT_FOUND_EXIT_CODE = 1


# -- shared with `longshore rotate` --------------------------------------------------------------------------


def cluster_options(func: F) -> F:
    """`--kubeconfig`, `--context`, `--server`, `--token`: how to reach the Kubernetes API."""
    for option in reversed(
        [
            click.option(
                "--kubeconfig",
                type=click.Path(path_type=Path),
                help="kubeconfig file (default: ~/.kube/config).",
            ),
            click.option("--context", "kube_context", help="kubeconfig context (default: the current one)."),
            click.option(
                "--server", help="API server URL, instead of a kubeconfig (e.g. the local emulator)."
            ),
            click.option("--token", help="Bearer token for --server."),
        ]
    ):
        func = option(func)
    return func


def store_options(func: F) -> F:
    """`--table` / `--claims`: where the node claims are read from."""
    func = click.option(
        "--claims",
        "claims_file",
        type=click.Path(path_type=Path),
        help="JSON list of node claims (as the claim store keeps them).",
    )(func)
    return click.option("--table", help="DynamoDB table holding the node claims (the production store).")(
        func
    )


def kube_api_client(
    kubeconfig: Path | None, kube_context: str | None, server: str | None, token: str | None
) -> Any:
    """A `kubernetes` ApiClient from a kubeconfig (and context) or a server URL (and token)."""
    from kubernetes import client, config

    if server:
        configuration = client.Configuration(host=server.rstrip("/"))
        if token:
            configuration.api_key = {"BearerToken": token}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        return client.ApiClient(configuration)
    try:
        return config.new_client_from_config(
            config_file=str(kubeconfig) if kubeconfig else None, context=kube_context
        )
    except Exception as error:  # the kubernetes loader raises many kinds
        where = kubeconfig or "~/.kube/config"
        raise click.UsageError(f"cannot load kubeconfig {where}: {error} (or pass --server URL)") from error


def read_claims_file(path: Path) -> tuple[NodeClaim, ...]:
    """Claims from a JSON list of claim documents; errors name the file, the entry and the field."""
    from longshore.adapters.aws.dynamodb import claim_from_doc

    try:
        document = json.loads(path.read_text())
    except OSError as error:
        raise click.BadParameter(f"{path}: cannot read: {error}", param_hint="--claims") from error
    except json.JSONDecodeError as error:
        raise click.BadParameter(
            f"{path}: line {error.lineno}: not JSON: {error.msg}", param_hint="--claims"
        ) from error
    if not isinstance(document, list):
        raise click.BadParameter(
            f"{path}: expected a JSON list of node claims, got {type(document).__name__}",
            param_hint="--claims",
        )
    claims: list[NodeClaim] = []
    for index, entry in enumerate(document):
        try:
            claims.append(claim_from_doc(json.dumps(entry)))
        except (TypeError, KeyError, ValueError) as error:
            name = entry.get("id") if isinstance(entry, Mapping) else None
            raise click.BadParameter(
                f"{path}: claim [{index}] ({name or 'no id'}): {error}", param_hint="--claims"
            ) from error
    return tuple(claims)


def cluster_claims(api: Any) -> ClaimStore:
    """The claims the cluster's NodeClaim objects describe (Karpenter's, or the ones Longshore publishes)."""
    from longshore.adapters.kube.karpenter import KubeKarpenterObjects
    from longshore.adapters.memory import MemoryClaimStore
    from longshore.core.karpenter_objects import claim_from_nodeclaim

    store = MemoryClaimStore()
    for obj in KubeKarpenterObjects(api).list_objects("NodeClaim"):
        claim = claim_from_nodeclaim(obj)
        if claim is not None:
            store.put(claim)
    return store


def claim_store(table: str | None, claims_file: Path | None, region: str, api: Any = None) -> ClaimStore:
    """`--table` or `--claims`; with neither, the cluster's NodeClaims (through `api`)."""
    if table is not None and claims_file is not None:
        raise click.UsageError("give the node claims with at most one of --table NAME or --claims FILE")
    if table is None and claims_file is None:
        if api is None:
            raise click.UsageError("give the node claims with --table NAME or --claims FILE")
        return cluster_claims(api)
    if claims_file is not None:
        from longshore.adapters.memory import MemoryClaimStore

        store = MemoryClaimStore()
        for claim in read_claims_file(claims_file):
            store.put(claim)
        return store
    import boto3  # type: ignore[import-untyped]

    from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable

    return DynamoClaimStore(DynamoTable(boto3.client("dynamodb", region_name=region), str(table)))


def offline_catalog(region: str) -> Catalog:
    """EC2's instance shapes and zones as the package ships them (`longshore/data/ec2/`), priced from the shipped table (no AWS calls)."""
    from longshore.adapters.aws.instance_types import OfflineDataMissing
    from longshore.adapters.aws.instance_types import offline_catalog as build

    try:
        return build(region)
    except OfflineDataMissing as error:
        raise click.ClickException(f"no offline instance data for {region} ({error}); pass --live") from error


def load_catalog_for(config: ClusterConfig, live: bool) -> Catalog:
    if not live:
        return offline_catalog(config.region)
    import boto3

    from longshore.adapters.aws.instance_types import load_catalog

    class _Clock:
        def now(self) -> float:
            return time.time()

        def sleep(self, seconds: float) -> None:
            time.sleep(seconds)

    return load_catalog(
        boto3.client("ec2", region_name=config.region),
        boto3.client("pricing", region_name="us-east-1"),
        config.region,
        _Clock(),
    )


# -- the answers ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    kind: str  # node | pod
    name: str
    verdict: str  # decision | consolidation-candidate | left-alone | blocked | not-managed | disrupting | running | ...
    reason: str
    details: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "verdict": self.verdict,
            "reason": self.reason,
            "details": list(self.details),
        }


def _budget_lines(config: ClusterConfig, pool_name: str, inp: Any) -> tuple[str, ...]:
    pool = next((p for p in config.node_pools if p.name == pool_name), None)
    if pool is None:
        return (f"pool {pool_name} is not in the configuration",)
    pass_budgets = budgets.PassBudgets(inp)
    count, busy = pass_budgets.count[pool_name], pass_budgets.disrupting[pool_name]
    lines = []
    for reason in (
        DisruptionReason.EMPTY,
        DisruptionReason.DRIFTED,
        DisruptionReason.UNDERUTILIZED,
        DisruptionReason.EXPIRED,
    ):
        allowance = pass_budgets.allowance(pool, reason)
        allowed = "unlimited" if allowance.allowed >= budgets.UNLIMITED else str(allowance.allowed)
        lines.append(
            f"budget {budgets.budget_reason(reason)}: {allowed} more now ({count} nodes, {busy} disrupting)"
        )
    return tuple(lines)


def explain_node(
    name: str, snapshot: Any, config: ClusterConfig, placement_failures: Mapping[str, str] | None = None
) -> Answer:
    from longshore.services.disruption_events import describe_decision

    inp = snapshot.input
    managed = snapshot.managed(name)
    if managed is None:
        if name in snapshot.unreadable:
            return Answer("node", name, "blocked", snapshot.unreadable[name])
        return Answer(
            "node",
            name,
            "not-managed",
            f"node {name} is not owned by cluster {config.name}: no NodeClaim for its instance; "
            "Longshore never disrupts it (its pods may move onto it)",
        )
    head = (
        f"pool {managed.nodepool}, {managed.instance_type} {managed.capacity_type} in {managed.zone}, "
        f"${managed.price:.4f}/h, {len(managed.reschedulable_pods())} pods to move"
    )
    details = (
        head,
        *_budget_lines(config, managed.nodepool, inp),
        *unresolved_lines(inp, placement_failures or {}),
    )
    plan = planner.plan(inp)
    for decision in plan.decisions:
        if name in decision.node_names:
            verdict = (
                "consolidation-candidate" if decision.reason == DisruptionReason.UNDERUTILIZED else "decision"
            )
            text = describe_decision(decision)
            if verdict == "consolidation-candidate":
                text += " (acts after a 15 s re-validation)"
            return Answer("node", name, verdict, text, details)
    skipped = next((p for p in plan.passed_over if p.node == name), None)
    if skipped is not None and skipped.kind is PassedOverKind.REJECTED:
        # a move exists but is not worth its disruption (Balanced score, or the pool's savings threshold)
        return Answer("node", name, "left-alone", skipped.reason, details)
    reason = plan.reason_for(name) or "nothing to do"
    verdict = "disrupting" if reason == "already being disrupted" or managed.disrupting else "blocked"
    return Answer("node", name, verdict, reason, details)


def _find_pod(
    manifests: Sequence[Mapping[str, Any]], target: str, namespace: str | None
) -> Mapping[str, Any] | None:
    wanted_ns, _, wanted = target.rpartition("/")
    wanted_ns = wanted_ns or namespace or ""
    found = [
        m
        for m in manifests
        if (m.get("metadata") or {}).get("name") == wanted
        and (not wanted_ns or (m.get("metadata") or {}).get("namespace") == wanted_ns)
    ]
    if len(found) > 1:
        spaces = ", ".join(sorted(str((m.get("metadata") or {}).get("namespace")) for m in found))
        raise click.UsageError(f"pod {wanted} exists in several namespaces ({spaces}); write NAMESPACE/NAME")
    return found[0] if found else None


def explain_pod(
    manifest: Mapping[str, Any],
    snapshot: Any,
    config: ClusterConfig,
    placement_failures: Mapping[str, str] | None = None,
) -> Answer:
    """Where a pod runs, or what the provisioner's plan does with it (a pool whose node class's placement
    group was not looked up is planned with the partition key open, as the provisioner plans it)."""
    from longshore.core.pod_manifest import pod_from_manifest
    from longshore.services import snapshot as snap

    meta, spec = manifest.get("metadata") or {}, manifest.get("spec") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    node_name = spec.get("nodeName")
    if node_name:
        managed = snapshot.managed(str(node_name))
        extra = ""
        if managed is not None and managed.disrupting:
            extra = "; that node is being disrupted, so the pod will be evicted (PDBs are honoured)"
        return Answer("pod", key, "running", f"pod {key} runs on node {node_name}{extra}")
    pod = pod_from_manifest(manifest)
    inp = snapshot.input
    details: list[str] = []
    if not snap.unschedulable_condition(manifest):
        details.append(
            "the kube-scheduler has not marked it Unschedulable yet: it may still fit an existing node"
        )
    if pod.nominated_node_name:
        details.append(f"it is nominated to node {pod.nominated_node_name}")
    pods = (*(p for p in inp.pending if p.key != key), pod)
    nodes = (*(n.node for n in inp.nodes if not n.disrupting), *inp.unmanaged)
    plan = solve(
        SchedulingInput(
            pods=pods,
            pools=config.pools_by_weight(),
            node_classes=config.node_classes,
            catalog=inp.catalog,
            nodes=tuple(nodes),
            in_flight=inp.in_flight,
            daemonsets=inp.daemonsets,
            unavailable=inp.unavailable,
            settings=config.settings,
            placement_groups=inp.placement_groups,
        )
    )
    for pod_key, reason in plan.unschedulable:
        if pod_key == key:
            return Answer("pod", key, "unschedulable", f"no node can run it: {reason}", tuple(details))
    for placement in plan.existing:
        if key in placement.pods:
            where = "in-flight claim" if placement.in_flight else "existing node"
            return Answer("pod", key, "fits", f"it fits on {where} {placement.node}", tuple(details))
    for claim in plan.new_claims:
        if key in claim.pods:
            note = launch_note(inp, placement_failures or {}, claim.nodepool)
            return Answer(
                "pod",
                key,
                "needs-node",
                f"the provisioner launches a node for it: {claim.instance_type} ({claim.capacity_type}, "
                f"{claim.zone}, ${claim.price_per_hour:.4f}/h) in pool {claim.nodepool}",
                (*details, *([note] if note else [])),
            )
    return Answer(
        "pod", key, "pending", "the packing engine did not consider it (not provisionable)", tuple(details)
    )


def _print(answer: Answer) -> None:
    colour = {
        "decision": "yellow",
        "consolidation-candidate": "yellow",
        "disrupting": "yellow",
        "blocked": "cyan",
        "not-managed": "cyan",
        "unschedulable": "red",
    }.get(answer.verdict, "green")
    click.secho(f"{answer.kind} {answer.name}: {answer.verdict}", bold=True, fg=colour)
    click.echo(f"  {answer.reason}")
    for line in answer.details:
        click.echo(f"  - {line}")


@click.command(name="explain")
@click.argument("target")
@config_options
@cluster_options
@store_options
@click.option("--namespace", "-n", help="Namespace of a pod given by name only.")
@click.option(
    "--live",
    is_flag=True,
    help="Price from AWS and look the placement groups up in EC2 (default credentials) instead of the "
    "shipped table.",
)
@placement_groups_option
@click.option("--now", "now_epoch", type=float, help="Evaluate at this epoch time (default: now).")
@click.option("--json", "as_json", is_flag=True, help="Print {kind, name, verdict, reason, details} as JSON.")
@click.option(
    "--what-if-removed",
    "what_if",
    is_flag=True,
    help="For a NODE: where its pods would go without it, the $/h difference, and what would block it.",
)
def command(
    target: str,
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    kubeconfig: Path | None,
    kube_context: str | None,
    server: str | None,
    token: str | None,
    table: str | None,
    claims_file: Path | None,
    namespace: str | None,
    live: bool,
    placement_groups_path: Path | None,
    now_epoch: float | None,
    as_json: bool,
    what_if: bool,
) -> None:
    """Explain why NODE is not being disrupted, or why POD (NAMESPACE/NAME) is pending."""
    from longshore.adapters.kube.cluster import KubeCluster
    from longshore.adapters.memory import MemoryOfferingAvailability
    from longshore.services.disruption_snapshot import take_snapshot

    config = load_from_options(config_paths, region, cluster_name)
    api = kube_api_client(kubeconfig, kube_context, server, token)
    store = claim_store(table, claims_file, config.region, api)
    cluster = KubeCluster(api, component="longshore-cli")
    now = now_epoch if now_epoch is not None else time.time()
    catalog = load_catalog_for(config, live)
    groups = placement_groups_port(placement_groups_path, config, live=live)  # the planner's lookup
    snapshot = take_snapshot(
        cluster, store, MemoryOfferingAvailability(), catalog, config, now, placement_groups=groups
    )
    failures = groups.failures if groups is not None else {}
    if "/" not in target and target in snapshot.node_manifests:
        from longshore.cli.what_if import what_if_removed

        answer = (what_if_removed if what_if else explain_node)(target, snapshot, config, failures)
    else:
        manifest = _find_pod(snapshot.pod_manifests, target, namespace)
        if manifest is None:
            click.secho(f"no node or pod called {target!r} in the cluster", fg="red", err=True)
            raise click.exceptions.Exit(NOT_FOUND_EXIT_CODE)
        answer = explain_pod(manifest, snapshot, config, failures)
    if as_json:
        click.echo(json.dumps(answer.as_json(), indent=2))
    else:
        _print(answer)
