"""Disruption and rotation commands: the decisions that the disruption workflow executes.

Theory of operation: the planner, the interruption handler and the `rotate` command *decide*; they emit a
`DisruptionCommand` (one node to cordon, drain and terminate) or a `RotationRequest` (a list of nodes to
replace in turn). A command is a frozen value with two serialised forms:

- `to_input()`: the Step Functions execution input (camelCase JSON), read back with `from_input()`;
- `execution_name()`: a deterministic Step Functions execution name derived from the instance id and the
  reason. Step Functions refuses a second execution with the same name, so the name is the idempotency key:
  two planners (or a planner and an SQS redelivery) that decide the same disruption start it once.

Parsing is strict: a bad input names the field and the value, because operators type rotation inputs by hand.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final


class DisruptionReason(StrEnum):
    """Why a node is disrupted: the one vocabulary of the planner, budgets, commands, Events and metrics.

    Members are strings (`DisruptionReason.EXPIRED == "expired"`), so they serialise as their value in
    execution inputs, execution names, metric dimensions and log lines. Disruption budgets spell the graceful
    ones their own way (`core.disruption.budgets.budget_reason`).
    """

    INTERRUPTION = "interruption"  # EC2 reclaims the instance (spot interruption, scheduled change...)
    EXPIRED = "expired"  # older than the pool's expireAfter
    DRIFTED = "drifted"  # no longer what its pool or node class would launch
    EMPTY = "empty"  # no workload pods past consolidateAfter
    UNDERUTILIZED = "underutilized"  # consolidation: its pods fit elsewhere for less
    ROTATION = "rotation"  # `longshore rotate`
    REBALANCE = "rebalance"  # an EC2 rebalance recommendation the pool acts on
    MANUAL = "manual"  # a command started by hand
    DELETED = (
        "deleted"  # the Node was deleted (`kubectl delete node`): drain, terminate, release the finalizer
    )
    UNHEALTHY = "unhealthy"  # node auto-repair: a bad condition or EC2 status check outlasted its toleration
    STATIC_SCALE_DOWN = "static-scale-down"  # a static NodePool holds more nodes than its `replicas`


REASONS: Final = frozenset(DisruptionReason)

# Step Functions execution names: 1-80 characters, none of whitespace, brackets, wildcards, the characters
# " # % \ ^ | ~ ` $ & , ; : / and no control characters.
_NAME_FORBIDDEN = re.compile(r"""[\s<>{}\[\]?*"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]""")
MAX_EXECUTION_NAME = 80
_ROTATION_KEYS: Final = frozenset(
    {"nodes", "maxUnavailable", "surge", "canary", "reason", "drainSeconds", "requestedAt"}
)


class CommandError(ValueError):
    """A command or rotation input that cannot be executed; the message names the field and the value."""


def execution_name_of(*parts: str) -> str:
    """A valid, deterministic Step Functions execution name built from `parts`.

    Forbidden characters become `-`; a name longer than 80 characters keeps its head and gets a short hash
    of the whole so that distinct inputs keep distinct names.
    """
    raw = "-".join(part for part in parts if part)
    clean = _NAME_FORBIDDEN.sub("-", raw) or "unnamed"
    if len(clean) <= MAX_EXECUTION_NAME:
        return clean
    digest = hashlib.sha256(raw.encode()).hexdigest()[:12]
    return f"{clean[: MAX_EXECUTION_NAME - len(digest) - 1]}-{digest}"


#: Statuses of a closed execution that did not do its job: the same disruption may start again, under
#: `attempt_name` (Step Functions keeps a used name for 90 days).
RESTARTABLE_STATUSES: Final = frozenset({"FAILED", "ABORTED", "TIMED_OUT"})
MAX_ATTEMPTS: Final = 20


def attempt_name(name: str, attempt: int) -> str:
    """The execution name of attempt `attempt` (1 is the plain name): `<name>-a<attempt>`, <= 80 characters."""
    return name if attempt <= 1 else execution_name_of(name, f"a{attempt}")


def _field(where: str, name: str, value: object) -> str:
    return f"{where}: field {name!r} has value {value!r}"


def _optional_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise CommandError(f"{_field(where, key, value)}; expected a non-empty string or null")
    return value


def _bool(data: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise CommandError(f"{_field(where, key, value)}; expected true or false")
    return value


def _optional_number(data: Mapping[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CommandError(f"{_field(where, key, value)}; expected a number of seconds or null")
    return float(value)


ONCE_PER_NODE_REASONS: Final = frozenset(
    {DisruptionReason.INTERRUPTION, DisruptionReason.REBALANCE, DisruptionReason.DELETED}
)


@dataclass(frozen=True, slots=True)
class DisruptionCommand:
    """Disrupt one node: optionally launch its replacement, taint, drain, terminate, delete.

    `deadline_epoch`: after it, pods that still cannot be evicted (PDB, do-not-disrupt) are deleted. Without
    a deadline the drain never overrides a PDB; it gives up after a bounded time and rolls back instead.
    """

    instance_id: str
    reason: str  # a `DisruptionReason` (checked; read back from an execution input as its string value)
    node_name: str | None = None
    claim_id: str | None = None
    urgent: bool = False  # do not wait for a replacement
    replace: bool = False  # launch a replacement first (surge)
    deadline_epoch: float | None = None  # after it, pods that cannot be evicted are deleted
    requested_at: float = 0.0

    def __post_init__(self) -> None:
        where = "DisruptionCommand"
        if not self.instance_id or _NAME_FORBIDDEN.search(self.instance_id):
            raise CommandError(
                f"{_field(where, 'instanceId', self.instance_id)}; expected an EC2 instance id"
            )
        if self.reason not in REASONS:
            raise CommandError(f"{_field(where, 'reason', self.reason)}; expected one of {sorted(REASONS)}")

    def execution_name(self) -> str:
        """Deterministic from instance id + reason; a valid Step Functions name (<= 80 characters).

        An interruption (or rebalance recommendation) is acted on once per node, so its name is just reason + instance: duplicated and
        out-of-order warnings collapse into one execution. Voluntary disruptions can be rolled back and
        decided again later, and Step Functions keeps a name reserved for 90 days, so their names also
        carry the decision time (`requested_at`); a retried start of the same decision reuses it.
        """
        if self.reason in ONCE_PER_NODE_REASONS or not self.requested_at:
            return execution_name_of(self.reason, self.instance_id)
        return execution_name_of(self.reason, self.instance_id, str(int(self.requested_at)))

    def to_input(self) -> dict[str, Any]:
        """The disruption state machine's input JSON."""
        return {
            "instanceId": self.instance_id,
            "reason": self.reason,
            "nodeName": self.node_name,
            "claimId": self.claim_id,
            "urgent": self.urgent,
            "replace": self.replace,
            "deadlineEpoch": self.deadline_epoch,
            "requestedAt": self.requested_at,
        }

    @classmethod
    def from_input(cls, data: Mapping[str, Any], where: str = "disruption input") -> DisruptionCommand:
        """Parse `to_input()` JSON (extra keys, such as workflow progress, are ignored)."""
        if not isinstance(data, Mapping):
            raise CommandError(f"{where}: expected a JSON object, got {type(data).__name__}")
        instance_id = data.get("instanceId")
        if not isinstance(instance_id, str) or not instance_id:
            raise CommandError(f"{_field(where, 'instanceId', instance_id)}; expected an EC2 instance id")
        reason = data.get("reason")
        if not isinstance(reason, str) or reason not in REASONS:
            raise CommandError(f"{_field(where, 'reason', reason)}; expected one of {sorted(REASONS)}")
        requested_at = _optional_number(data, "requestedAt", where)
        return cls(
            instance_id=instance_id,
            reason=reason,
            node_name=_optional_str(data, "nodeName", where),
            claim_id=_optional_str(data, "claimId", where),
            urgent=_bool(data, "urgent", where, False),
            replace=_bool(data, "replace", where, False),
            deadline_epoch=_optional_number(data, "deadlineEpoch", where),
            requested_at=requested_at or 0.0,
        )


@dataclass(frozen=True, slots=True)
class RotationRequest:
    """Replace a list of nodes, `max_unavailable` at a time, a canary first.

    `surge` (default) launches each replacement before its node is drained. `drain_seconds`, when set, is
    the per-node drain deadline (after it, PDB-blocked pods are deleted); unset, a blocked drain rolls back.
    """

    nodes: tuple[str, ...]
    max_unavailable: int = 1
    surge: bool = True
    canary: bool = True
    reason: str = DisruptionReason.ROTATION
    drain_seconds: int | None = None
    requested_at: float = 0.0

    def __post_init__(self) -> None:
        where = "RotationRequest"
        if not self.nodes:
            raise CommandError(f"{_field(where, 'nodes', list(self.nodes))}; expected at least one node name")
        for index, node in enumerate(self.nodes):
            if not isinstance(node, str) or not node:
                raise CommandError(f"{_field(where, f'nodes[{index}]', node)}; expected a node name")
        if len(set(self.nodes)) != len(self.nodes):
            duplicates = sorted({n for n in self.nodes if self.nodes.count(n) > 1})
            raise CommandError(
                f"{_field(where, 'nodes', list(self.nodes))}; duplicate node names {duplicates}"
            )
        if isinstance(self.max_unavailable, bool) or not 1 <= self.max_unavailable <= 1000:
            raise CommandError(
                f"{_field(where, 'maxUnavailable', self.max_unavailable)}; expected an integer from 1 to 1000"
            )
        if self.reason not in REASONS:
            raise CommandError(f"{_field(where, 'reason', self.reason)}; expected one of {sorted(REASONS)}")
        if self.drain_seconds is not None and (
            isinstance(self.drain_seconds, bool) or self.drain_seconds < 0
        ):
            raise CommandError(f"{_field(where, 'drainSeconds', self.drain_seconds)}; expected seconds >= 0")

    def execution_name(self) -> str:
        """Deterministic from the node set and the request time, so a retried `rotate` starts once."""
        digest = hashlib.sha256("\n".join(sorted(self.nodes)).encode()).hexdigest()[:10]
        return execution_name_of("rotate", str(int(self.requested_at)), digest)

    def to_input(self) -> dict[str, Any]:
        """The rotation state machine's input JSON (documented in docs/workflow.md)."""
        return {
            "nodes": list(self.nodes),
            "maxUnavailable": self.max_unavailable,
            "surge": self.surge,
            "canary": self.canary,
            "reason": self.reason,
            "drainSeconds": self.drain_seconds,
            "requestedAt": self.requested_at,
        }

    @classmethod
    def from_input(cls, data: Mapping[str, Any], where: str = "rotation input") -> RotationRequest:
        if not isinstance(data, Mapping):
            raise CommandError(f"{where}: expected a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - _ROTATION_KEYS)
        if unknown:
            raise CommandError(f"{_field(where, unknown[0], data[unknown[0]])}; unknown field")
        nodes = data.get("nodes")
        if not isinstance(nodes, list):
            raise CommandError(f"{_field(where, 'nodes', nodes)}; expected a list of node names")
        max_unavailable = data.get("maxUnavailable", 1)
        if isinstance(max_unavailable, bool) or not isinstance(max_unavailable, int):
            raise CommandError(f"{_field(where, 'maxUnavailable', max_unavailable)}; expected an integer")
        reason = data.get("reason", DisruptionReason.ROTATION.value)
        if not isinstance(reason, str):
            raise CommandError(f"{_field(where, 'reason', reason)}; expected one of {sorted(REASONS)}")
        drain = data.get("drainSeconds")
        if drain is not None and (isinstance(drain, bool) or not isinstance(drain, int)):
            raise CommandError(f"{_field(where, 'drainSeconds', drain)}; expected whole seconds or null")
        return cls(
            nodes=tuple(nodes),
            max_unavailable=max_unavailable,
            surge=_bool(data, "surge", where, True),
            canary=_bool(data, "canary", where, True),
            reason=reason,
            drain_seconds=drain,
            requested_at=_optional_number(data, "requestedAt", where) or 0.0,
        )
