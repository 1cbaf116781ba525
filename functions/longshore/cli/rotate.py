"""`longshore rotate --cluster CONFIG (--node N ... | --selector LABELS | --drifted | --older-than 30d)`: start a
manual rotation of nodes through the rotation state machine.

Theory of operation: the command resolves the nodes (through the Cluster port on the kubernetes client, and
the claims for ownership and age: `--table`, `--claims`, or by default the cluster's NodeClaims), refuses any node this cluster does not own (no NodeClaim for its
instance) and says which and why, prints what it would do, and, unless `--dry-run`, starts one rotation
execution with `RotationRequest.to_input()`: exactly the JSON documented in docs/workflow.md, so the same
rotation can be started by hand from the console or the AWS CLI. The selections combine (a node must match
all that are given): `--node` names, `--selector` a label selector (as `kubectl -l`), `--drifted` asks the
planner's drift rules (pool and node-class hashes, the resolved AMI when `--ami` names it, requirements),
`--older-than` compares with the claim's launch time. The execution name is deterministic from the node set
and the request time, so a retried command starts once (`already started` is printed then).

The state machine is `--state-machine-arn`, else `LONGSHORE_ROTATION_STATE_MACHINE_ARN`, else the one state
machine whose name ends in `rotation`. Exit status: 0 started (or dry run, or nothing to do), 1 refused, 2 bad
options or configuration.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import click

from longshore.cli.explain import claim_store, cluster_options, kube_api_client, store_options
from longshore.cli.options import cluster_name_option, load_from_options, region_option
from longshore.core.claims import NodeClaim, instance_id_of
from longshore.core.commands import CommandError, RotationRequest
from longshore.core.disruption.state import DisruptionInput
from longshore.core.model import ClusterConfig
from longshore.ports.kube import Cluster, Manifest
from longshore.ports.store import ClaimStore

REFUSED_EXIT_CODE = 1
_AGE = re.compile(r"^([0-9]{1,9})([smhdw])$")  # ASCII digits only; 9 digits is already 19,000 years
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> int:
    """Seconds in `30d`, `12h`, `90m`, `2w`..."""
    match = _AGE.match(text.strip())
    if match is None:
        shown = repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"
        raise click.BadParameter(
            f"{shown} is not a duration such as 30d, 12h, 90m or 2w", param_hint="--older-than"
        )
    return int(match.group(1)) * _AGE_UNITS[match.group(2)]


@dataclass(frozen=True, slots=True)
class Target:
    node: str
    instance_id: str | None
    claim: NodeClaim | None
    why: str  # why it was selected

    @property
    def owned(self) -> bool:
        return self.claim is not None


def _name(node: Manifest) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def select_targets(
    cluster: Cluster,
    store: ClaimStore,
    config: ClusterConfig,
    now: float,
    *,
    names: tuple[str, ...],
    selector: str | None,
    drifted: bool,
    older_than: int | None,
    current_amis: frozenset[str] = frozenset(),
) -> tuple[list[Target], list[str]]:
    """The nodes the options select (in the order given, else by name) and the names that do not exist."""
    from longshore.core.disruption.drift import drift_reason

    nodes = {_name(n): n for n in cluster.list_nodes(label_selector=selector)}
    missing = [n for n in names if n not in nodes]
    chosen = [n for n in names if n in nodes] if names else sorted(nodes)
    claims = {c.instance_id: c for c in store.list() if c.instance_id}
    inp: DisruptionInput | None = None
    if drifted:
        from longshore.adapters.memory import MemoryOfferingAvailability
        from longshore.cli.explain import offline_catalog
        from longshore.services.disruption_snapshot import take_snapshot

        inp = take_snapshot(
            cluster, store, MemoryOfferingAvailability(), offline_catalog(config.region), config, now
        ).input
        if current_amis:
            inp = replace(inp, current_images={c.name: current_amis for c in config.node_classes})
    managed = {n.name: n for n in inp.nodes} if inp is not None else {}
    targets: list[Target] = []
    for name in chosen:
        manifest = nodes[name]
        instance_id = instance_id_of(str((manifest.get("spec") or {}).get("providerID") or ""))
        claim = claims.get(instance_id or "")
        reasons = ["named" if names else f"matches {selector}" if selector else "all nodes"]
        if older_than is not None:
            launched = (claim.launched_at or claim.created_at) if claim else None
            if launched is None or now - launched < older_than:
                continue
            reasons.append(f"{(now - launched) / 86400:.1f} days old")
        if inp is not None:
            node = managed.get(name)
            pool = next((p for p in config.node_pools if claim and p.name == claim.nodepool), None)
            why = drift_reason(node, pool, inp) if node is not None and pool is not None else None
            if why is None:
                continue
            reasons.append(f"drifted: {why}")
        targets.append(Target(name, instance_id, claim, "; ".join(reasons)))
    return targets, missing


def _rotation_arn(explicit: str | None, region: str) -> str:
    if explicit:
        return explicit
    from_env = os.environ.get("LONGSHORE_ROTATION_STATE_MACHINE_ARN", "").strip()
    if from_env:
        return from_env
    import boto3  # type: ignore[import-untyped]

    client = boto3.client("stepfunctions", region_name=region)
    found = [
        m["stateMachineArn"]
        for page in client.get_paginator("list_state_machines").paginate()
        for m in page["stateMachines"]
        if m["name"].endswith("rotation")
    ]
    if len(found) != 1:
        raise click.UsageError(
            f"found {len(found)} state machines named *rotation ({', '.join(found) or 'none'}); "
            "pass --state-machine-arn"
        )
    return str(found[0])


@click.command(name="rotate")
@click.option(
    "--cluster",
    "--config",
    "-c",
    "config_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The cluster config (or Karpenter manifests); repeatable.",
)
@region_option
@cluster_name_option
@cluster_options
@store_options
@click.option("--node", "names", multiple=True, help="A node to rotate (repeatable).")
@click.option("--selector", "-l", help="Rotate the nodes with these labels (kubectl -l syntax).")
@click.option(
    "--drifted", is_flag=True, help="Rotate the nodes that have drifted from their pool or node class."
)
@click.option(
    "--ami", "amis", multiple=True, help="With --drifted: the current AMI id(s); other AMIs count as drift."
)
@click.option(
    "--older-than", "older_than_text", help="Rotate nodes launched longer ago than this (30d, 12h...)."
)
@click.option("--max-unavailable", default=1, show_default=True, type=int, help="Nodes rotated at once.")
@click.option(
    "--no-surge", is_flag=True, help="Drain before launching the replacement (default: replacement first)."
)
@click.option("--no-canary", is_flag=True, help="Do not rotate the first node alone before the rest.")
@click.option(
    "--drain-seconds", type=int, help="Per-node drain deadline; after it PDB-blocked pods are deleted."
)
@click.option("--state-machine-arn", help="The rotation state machine (default: found by name).")
@click.option("--now", "now_epoch", type=float, help="Use this epoch time as now (ages, request time).")
@click.option("--dry-run", is_flag=True, help="Print what would be done and start nothing.")
def command(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    kubeconfig: Path | None,
    kube_context: str | None,
    server: str | None,
    token: str | None,
    table: str | None,
    claims_file: Path | None,
    names: tuple[str, ...],
    selector: str | None,
    drifted: bool,
    amis: tuple[str, ...],
    older_than_text: str | None,
    max_unavailable: int,
    no_surge: bool,
    no_canary: bool,
    drain_seconds: int | None,
    state_machine_arn: str | None,
    now_epoch: float | None,
    dry_run: bool,
) -> None:
    """Replace nodes one at a time (or --max-unavailable at a time), replacement first, a canary first."""
    if not (names or selector or drifted or older_than_text):
        raise click.UsageError("choose the nodes with --node, --selector, --drifted or --older-than")
    older_than = parse_age(older_than_text) if older_than_text else None
    config = load_from_options(config_paths, region, cluster_name)
    from longshore.adapters.kube.cluster import KubeCluster

    api = kube_api_client(kubeconfig, kube_context, server, token)
    store = claim_store(table, claims_file, config.region, api)
    cluster: Cluster = KubeCluster(api, component="longshore-cli")
    now = now_epoch if now_epoch is not None else time.time()
    targets, missing = select_targets(
        cluster,
        store,
        config,
        now,
        names=names,
        selector=selector,
        drifted=drifted,
        older_than=older_than,
        current_amis=frozenset(amis),
    )
    foreign = [t for t in targets if not t.owned]
    if missing or foreign:
        click.secho(
            f"refusing to rotate: cluster {config.name} does not own these nodes",
            fg="red",
            bold=True,
            err=True,
        )
        for name in missing:
            click.echo(f"  {name}: no such node", err=True)
        for target in foreign:
            click.echo(
                f"  {target.node}: no NodeClaim for instance {target.instance_id or '(no aws:/// providerID)'} "
                f"in the claim store; Longshore did not launch it",
                err=True,
            )
        raise click.exceptions.Exit(REFUSED_EXIT_CODE)
    if not targets:
        click.echo("no node matches; nothing to rotate")
        return
    try:
        request = RotationRequest(
            nodes=tuple(t.node for t in targets),
            max_unavailable=max_unavailable,
            surge=not no_surge,
            canary=not no_canary,
            drain_seconds=drain_seconds,
            requested_at=float(int(now)),
        )
    except CommandError as error:
        raise click.UsageError(str(error)) from error
    click.secho(f"rotation of {len(targets)} node(s) in cluster {config.name}", bold=True)
    for index, target in enumerate(targets):
        claim = target.claim
        assert claim is not None
        role = "canary" if index == 0 and request.canary else "      "
        click.echo(
            f"  {role} {target.node:<40} {target.instance_id:<20} {claim.nodepool}/{claim.instance_type} "
            f"({target.why})"
        )
    mode = "replacement first (surge)" if request.surge else "drain first (no surge)"
    click.echo(
        f"  {mode}; at most {request.max_unavailable} at a time"
        + (f"; drain deadline {request.drain_seconds} s" if request.drain_seconds is not None else "")
    )
    click.echo(f"execution name: {request.execution_name()}")
    click.echo("input: " + json.dumps(request.to_input(), sort_keys=True))
    if dry_run:
        click.echo("dry run: nothing started")
        return
    import boto3

    from longshore.adapters.aws.stepfunctions import StepFunctionsWorkflow

    arn = _rotation_arn(state_machine_arn, config.region)
    workflow = StepFunctionsWorkflow(boto3.client("stepfunctions", region_name=config.region), "", arn)
    result = workflow.start_rotation(request)
    if result.started:
        click.secho(f"started {result.execution_arn}", fg="green")
    else:
        click.secho(f"already started: {result.execution_arn or result.execution_name}", fg="yellow")
