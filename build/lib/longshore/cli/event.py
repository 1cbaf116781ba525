"""`longshore event FILE...`: what Longshore would do with an EventBridge event, without touching anything.

Theory of operation: each FILE holds one EventBridge event (a JSON object), a JSON array of events, or JSON
lines (one event per line). Each event goes through the same parser as the Lambda (`adapters.events.parse`)
and the same policy table (`core.interruption`), and nothing is executed. Alone, the command is a dry run that
needs no cluster: it prints the event's kind, its instance ids and the table row that applies (`per-pool` for
rebalance recommendations). With `--cluster CONFIG` it also answers *which of these instances are ours and
what exactly happens to each*: ownership comes from the node claims, read either from a JSON file
(`--claims`, a list of claim documents as the claim store keeps them) or from the DynamoDB table itself
(`--table`, through the production adapter, so `AWS_ENDPOINT_URL` can point it at a moto server), and each
pool's rebalance policy from the config. The plan is computed as of the event's own time, so the output is
deterministic. `--json` prints `[{"file", "kind", "instances", "action", "error", "owned", "decisions"}]`
(`owned` and `decisions` are null without `--cluster`). The exit status is 1 when any event is malformed or a
file cannot be read, 2 for a bad option or configuration.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ConfigDict, ValidationError

from longshore.adapters.events.parse import MalformedEventError, format_validation_error, parse_event
from longshore.core.interruption import (
    ACTION_DESCRIPTIONS,
    InterruptionEvent,
    OwnedInstance,
    deadline_of,
    decide,
    kind_action,
)
from longshore.core.model import RebalancePolicy

ClaimLookup = Callable[[str], OwnedInstance | None]


@dataclass(frozen=True, slots=True)
class Report:
    file: str
    event: InterruptionEvent | None = None
    error: str | None = None
    owned: tuple[str, ...] | None = None
    decisions: Mapping[str, str] | None = None
    details: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "kind": self.event.kind if self.event else None,
            "instances": list(self.event.instance_ids) if self.event else [],
            "action": kind_action(self.event) if self.event else None,
            "error": self.error,
            "owned": list(self.owned) if self.owned is not None else None,
            "decisions": dict(self.decisions) if self.decisions is not None else None,
        }


class _ClaimRow(BaseModel):
    """The fields of a stored claim document that ownership needs (other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    nodepool: str
    instance_id: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    node_name: str | None = None
    state: str = "initialized"


@click.command(name="event")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--cluster",
    "cluster_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Cluster config or Karpenter manifests (file or directory): report ownership and per-pool actions.",
)
@click.option(
    "--claims",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON list of the cluster's node claims (as the claim store keeps them); needs --cluster.",
)
@click.option("--table", help="Read the node claims from this DynamoDB table instead; needs --cluster.")
@click.option(
    "--json", "as_json", is_flag=True, help='Print [{"file","kind","instances","action","error",...}].'
)
def command(
    files: tuple[Path, ...],
    cluster_paths: tuple[Path, ...],
    claims: Path | None,
    table: str | None,
    as_json: bool,
) -> None:
    """Show what Longshore would do with EventBridge events (a dry run; nothing is changed)."""
    lookup: ClaimLookup | None = None
    if cluster_paths or claims or table:
        lookup = _ownership(cluster_paths, claims, table)
    reports = [report for path in files for report in _reports(path, lookup)]
    if as_json:
        click.echo(json.dumps([r.as_json() for r in reports], indent=2))
    else:
        for report in reports:
            _print(report)
    if any(r.error for r in reports):
        raise SystemExit(1)


def _ownership(cluster_paths: tuple[Path, ...], claims: Path | None, table: str | None) -> ClaimLookup:
    if not cluster_paths:
        raise click.UsageError("--claims and --table need --cluster CONFIG (the pools' rebalance policies)")
    if (claims is None) == (table is None):
        raise click.UsageError(
            "--cluster needs exactly one of --claims FILE or --table NAME (the node claims)"
        )
    from longshore.config.errors import ConfigErrors
    from longshore.config.loader import load_cluster

    try:
        config = load_cluster(list(cluster_paths))
    except ConfigErrors as errors:
        click.echo(str(errors), err=True)
        raise SystemExit(2) from errors
    pools: dict[str, RebalancePolicy] = {pool.name: pool.rebalance for pool in config.node_pools}
    default = config.interruption.rebalance_default

    def owned(row: _ClaimRow, instance_id: str) -> OwnedInstance:
        return OwnedInstance(
            instance_id=instance_id,
            claim_id=row.id,
            nodepool=row.nodepool,
            instance_type=row.instance_type or "",
            zone=row.zone or "",
            capacity_type=row.capacity_type or "",
            node_name=row.node_name,
            disrupting=row.state == "deleting",
            rebalance=pools.get(row.nodepool, default),
        )

    if claims is not None:
        rows = {row.instance_id: row for row in _read_claims(claims) if row.instance_id}
        return lambda instance_id: owned(rows[instance_id], instance_id) if instance_id in rows else None
    assert table is not None
    return _table_lookup(table, owned)


def _read_claims(path: Path) -> list[_ClaimRow]:
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
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
    rows = []
    for index, item in enumerate(document):
        try:
            rows.append(_ClaimRow.model_validate(item))
        except ValidationError as error:
            raise click.BadParameter(
                f"{path}: claim [{index}]: {format_validation_error(error)}", param_hint="--claims"
            ) from error
    return rows


def _table_lookup(table: str, owned: Callable[[_ClaimRow, str], OwnedInstance]) -> ClaimLookup:
    import boto3  # type: ignore[import-untyped]

    from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable

    store = DynamoClaimStore(DynamoTable(boto3.client("dynamodb"), table))

    def lookup(instance_id: str) -> OwnedInstance | None:
        claim = store.by_instance(instance_id)
        if claim is None:
            return None
        row = _ClaimRow(
            id=claim.id,
            nodepool=claim.nodepool,
            instance_id=claim.instance_id,
            instance_type=claim.instance_type,
            zone=claim.zone,
            capacity_type=claim.capacity_type,
            node_name=claim.node_name,
            state=claim.state,
        )
        return owned(row, instance_id)

    return lookup


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    """(label, event text or object) for each event in the file; raises OSError/UnicodeDecodeError."""
    text = path.read_text()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) > 1 and _is_json(lines[0][1]):  # JSON lines
            for number, line in lines:
                yield f"{path}:{number}", line
            return
        yield str(path), text  # one (broken) document: let the parser say what is wrong with it
        return
    if isinstance(whole, list):
        for index, item in enumerate(whole):
            yield f"{path}[{index}]", item
    else:
        yield str(path), whole


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _reports(path: Path, lookup: ClaimLookup | None) -> Iterator[Report]:
    try:
        documents = list(_documents(path))
    except (OSError, UnicodeDecodeError) as error:
        yield Report(str(path), error=f"cannot read: {error}")
        return
    for label, document in documents:
        try:
            event = parse_event(document)
        except MalformedEventError as error:
            yield Report(label, error=str(error))
            continue
        if lookup is None:
            yield Report(label, event)
            continue
        owned = {i: o for i in event.instance_ids if (o := lookup(i)) is not None}
        plan = decide(event, owned, event.time)
        decisions = {d.instance_id: d.action for d in plan.decisions if d.instance_id is not None}
        details = tuple(
            f"{d.instance_id}: {d.action}" + (f" ({d.note})" if d.note else "")
            for d in plan.decisions
            if d.instance_id is not None
        )
        yield Report(label, event, owned=tuple(owned), decisions=decisions, details=details)


def _print(report: Report) -> None:
    if report.event is None:
        click.echo(f"{report.file}: error: {report.error}")
        return
    event = report.event
    row = kind_action(event)
    header = f"{report.file}: {event.kind} ({event.detail_type})"
    if event.state:
        header += f", state {event.state}"
    click.echo(header)
    click.echo(f"  instances: {', '.join(event.instance_ids) or '(none)'}")
    click.echo(f"  action: {row}: {ACTION_DESCRIPTIONS[row]}")
    if event.deadline is not None and row in ("interrupt", "drain"):
        click.echo(f"  deadline: {datetime.fromtimestamp(deadline_of(event), UTC).isoformat()}")
    if event.note:
        click.echo(f"  note: {event.note}")
    if report.owned is not None:
        click.echo(f"  owned by this cluster: {', '.join(report.owned) or '(none)'}")
        for line in report.details:
            click.echo(f"    {line}")
