"""Building blocks shared by every Karpenter dialect's schema: strict models, quantities, labels, requirements,
taints, kubelet settings and budgets, with the rules Karpenter's CRDs and webhooks enforce.

Theory of operation: schema models use the exact YAML field names as attribute names, so a pydantic error
location *is* the user's field path. Models are strict (`extra="forbid"`, no type coercion): a Kubernetes API
server rejects `values: [4]` or an unknown field, and so do we, but with a friendlier message (see
`config.validation_errors`). Rules that involve one field live in field validators; rules that relate several
fields of one object live in model validators that raise `FieldRuleError`, which carries the sub-path the
message is about, so `In` without values is reported at `...requirements[2].values`, not at the requirement.
The dialect being validated (`v1alpha5`, `v1beta1`, `v1`) is passed as validation context where a rule differs
between dialects (the `Gte`/`Lte` operators, block device size formats).
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationInfo, field_validator, model_validator

from longshore.config.durations import BUDGET, HMS, parse_duration
from longshore.config.errors import suggestion
from longshore.core import cron, quantity
from longshore.core.labels import (
    RESTRICTED_LABELS,
    WELL_KNOWN_LABELS,
    domain_of,
    normalize_key,
    restricted_reason,
)
from longshore.core.model import SAVINGS_THRESHOLD_ANNOTATION, SavingsThreshold

Dialect = str  # "v1alpha5" | "v1beta1" | "v1"


class FieldRuleError(ValueError):
    """A rule violation found while validating an object, about the field at sub-path `at` of that object."""

    def __init__(self, message: str, at: tuple[str | int, ...] = (), value: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.at = at
        self.value = value


class FieldRuleErrors(ValueError):
    """Several rule violations found on one object at once (so all are reported, not just the first)."""

    def __init__(self, issues: list[FieldRuleError]) -> None:
        super().__init__("; ".join(issue.message for issue in issues))
        self.issues = tuple(issues)


def raise_all(issues: list[FieldRuleError]) -> None:
    """Raise the collected issues of one object, if any."""
    if len(issues) == 1:
        raise issues[0]
    if issues:
        raise FieldRuleErrors(issues)


class StrictModel(BaseModel):
    """A schema object: unknown fields are errors and YAML types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def dialect_of(info: ValidationInfo) -> Dialect:
    context = info.context if isinstance(info.context, dict) else {}
    dialect = context.get("dialect", "v1")
    return dialect if isinstance(dialect, str) else "v1"


# --- quantities ---------------------------------------------------------------------------------------------


#: Kubernetes refuses a quantity past 2**63 - 1 (k8s.io/apimachinery pkg/api/resource/quantity.go); a text
#: longer than any such quantity is refused before it is parsed.
MAX_QUANTITY = 2**63 - 1
_MAX_QUANTITY_CHARS = 64


def _quantity_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a quantity such as 500m, 2 or 1.5Gi, got {value!r}")
    text = str(value)
    if len(text) > _MAX_QUANTITY_CHARS:
        raise ValueError(f"{text[:20]!r}... ({len(text)} characters) is not a quantity: too long")
    try:
        amount = quantity.parse_decimal(value)
        in_range = amount.is_finite() and abs(amount) <= MAX_QUANTITY
    except (quantity.QuantityError, ArithmeticError) as exc:
        raise ValueError(
            str(exc) if isinstance(exc, quantity.QuantityError) else f"{text!r} is out of range"
        ) from None
    if not in_range:
        raise ValueError(f"{text!r} is out of range: a quantity is at most {MAX_QUANTITY} (2**63 - 1)")
    return text


Quantity = Annotated[str, BeforeValidator(_quantity_text)]
"""A Kubernetes quantity (`500m`, `2`, `1.5Gi`); numbers in YAML are accepted, as the API server does."""


# --- names, label keys and values ---------------------------------------------------------------------------

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

#: Labels Karpenter sets on every node of a pool from the pool's own name; a pool may not set or require them.
POOL_SET_LABELS = frozenset({"karpenter.sh/nodepool", "karpenter.sh/provisioner-name"})
#: The domains karpenter.sh/v1 still reserves. Karpenter 1.9 (core `pkg/apis/v1/labels.go`) freed `kubernetes.io`
#: and `k8s.io`: it writes node labels itself at registration instead of through the kubelet's `--node-labels`.
V1_RESTRICTED_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")


def check_object_name(name: str) -> str:
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise ValueError(
            f"{name!r} is not a valid name: use lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit (at most 253 characters)"
        )
    return name


def check_label_key(key: str) -> str:
    """A qualified name (`[prefix/]name`), as Kubernetes requires for label and taint keys."""
    prefix, slash, name = key.rpartition("/")
    if (
        not name
        or len(name) > 63
        or not _LABEL_NAME.match(name)
        or (slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))
    ):
        raise ValueError(
            f"{key!r} is not a valid label key: use an optional DNS prefix and '/', then a name of at most "
            "63 letters, digits, '-', '_' or '.' (for example 'example.com/team' or 'node-type')"
        )
    return key


def check_label_value(value: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return value


def pool_label_reason(key: str, dialect: Dialect = "v1") -> str | None:
    """Why a pool may not set or require label `key` (None when it may).

    v1alpha5 and v1beta1 keep the rules of their era (`kubernetes.io` and `k8s.io` restricted too); v1 follows
    Karpenter 1.9+: only `karpenter.sh`, `karpenter.k8s.aws` (well-known labels excepted) and
    `kubernetes.io/hostname` are restricted.
    """
    if key in POOL_SET_LABELS:
        return f"label {key!r} is restricted: Karpenter sets it to the pool's name on every node"
    if dialect != "v1":
        return restricted_reason(key)
    stable = normalize_key(key)
    if stable in WELL_KNOWN_LABELS:
        return None
    if stable in RESTRICTED_LABELS:
        return restricted_reason(key)
    domain = domain_of(stable)
    parent = next((d for d in V1_RESTRICTED_DOMAINS if domain.endswith(d)), None)
    if parent is None:
        return None
    return (
        f"label {key!r} uses the restricted domain {parent!r}; use a well-known label of that domain or a custom "
        f"label outside the restricted domains ({', '.join(V1_RESTRICTED_DOMAINS)})"
    )


def check_pool_labels(labels: dict[str, str], dialect: Dialect = "v1") -> dict[str, str]:
    for key, value in labels.items():
        try:
            check_label_key(key)
            reason = pool_label_reason(key, dialect)
            if reason:
                raise ValueError(reason)
        except ValueError as exc:
            raise FieldRuleError(str(exc), at=(key,), value=key) from None
        try:
            check_label_value(value)
        except ValueError as exc:
            raise FieldRuleError(str(exc), at=(key,), value=value) from None
    return labels


class Metadata(BaseModel):
    """Object metadata: `name` is required; other fields `kubectl get -o yaml` prints are accepted and ignored."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    name: str
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        return check_object_name(name)


class PoolMetadata(Metadata):
    """A pool's metadata: Longshore reads one annotation of its own, `longshore.io/consolidation-min-savings`
    (`core.model.SavingsThreshold`), which Karpenter's API server accepts and ignores like any annotation."""

    @field_validator("annotations")
    @classmethod
    def _threshold(cls, annotations: dict[str, str]) -> dict[str, str]:
        value = annotations.get(SAVINGS_THRESHOLD_ANNOTATION)
        if value is not None:
            try:
                SavingsThreshold.parse(value)
            except ValueError as exc:
                raise FieldRuleError(str(exc), at=(SAVINGS_THRESHOLD_ANNOTATION,), value=value) from None
        return annotations


# --- requirements -------------------------------------------------------------------------------------------

#: Well-known labels whose values are a closed set (core and aws `pkg/apis/v1/labels.go`
#: `WellKnownValuesForRequirements`). An `In` requirement must name at least one of them; invalid values next
#: to valid ones are tolerated, as Karpenter does.
KNOWN_VALUES: dict[str, tuple[str, ...]] = {
    "karpenter.sh/capacity-type": ("on-demand", "spot", "reserved"),
    "karpenter.k8s.aws/instance-tenancy": ("default", "dedicated"),
}
OPERATORS_V1ALPHA5 = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
OPERATORS_V1 = (*OPERATORS_V1ALPHA5, "Gte", "Lte")
_NON_NEGATIVE_INTEGER = re.compile(r"^[0-9]+$")


class RequirementV1alpha5(StrictModel):
    """A node selector requirement: `key`, `operator`, `values`."""

    key: str
    operator: str
    values: list[str] = []

    @field_validator("key")
    @classmethod
    def _key(cls, key: str, info: ValidationInfo) -> str:
        check_label_key(key)
        reason = pool_label_reason(key, dialect_of(info))
        if reason:
            raise ValueError(reason)
        return key

    @field_validator("operator")
    @classmethod
    def _operator(cls, operator: str, info: ValidationInfo) -> str:
        dialect = dialect_of(info)
        supported = OPERATORS_V1 if dialect == "v1" else OPERATORS_V1ALPHA5
        if operator not in supported:
            newer = " (Gte and Lte need karpenter.sh/v1)" if operator in OPERATORS_V1 else ""
            raise ValueError(
                f"operator {operator!r} is not supported{newer}; use one of {', '.join(supported)}"
            )
        return operator

    @field_validator("values")
    @classmethod
    def _values(cls, values: list[str], info: ValidationInfo) -> list[str]:
        if info.data.get("operator") in ("Gt", "Lt", "Gte", "Lte"):
            return values  # the numeric rule below says what is wrong with them
        for index, value in enumerate(values):
            try:
                check_label_value(value)
            except ValueError as exc:
                raise FieldRuleError(str(exc), at=(index,), value=value) from None
        return values

    @model_validator(mode="after")
    def _values_match_operator(self) -> RequirementV1alpha5:
        op, values = self.operator, self.values
        known = KNOWN_VALUES.get(normalize_key(self.key))
        if op == "In" and known and values and not set(values) & set(known):
            raise FieldRuleError(
                f"no valid value for {self.key} in {values!r}; expected one of {', '.join(known)}",
                at=("values",),
                value=values,
            )
        if op == "In" and not values:
            raise FieldRuleError(f"operator In needs at least one value (key {self.key!r})", at=("values",))
        if op in ("Exists", "DoesNotExist") and values:
            raise FieldRuleError(
                f"operator {op} takes no values, got {values!r}", at=("values",), value=values
            )
        if op in ("Gt", "Lt", "Gte", "Lte") and (
            len(values) != 1 or not _NON_NEGATIVE_INTEGER.match(values[0])
        ):
            raise FieldRuleError(
                f"operator {op} needs exactly one value that is a non-negative integer "
                f'(written as a string, e.g. ["4"]), got {values!r}',
                at=("values",),
                value=values,
            )
        return self


class Requirement(RequirementV1alpha5):
    """A requirement with `minValues` (v1beta1 from v0.34, and v1)."""

    minValues: int | None = None

    @field_validator("minValues")
    @classmethod
    def _min_values(cls, min_values: int | None) -> int | None:
        if min_values is not None and not 1 <= min_values <= 50:
            raise ValueError(f"minValues must be between 1 and 50, got {min_values}")
        return min_values

    @model_validator(mode="after")
    def _enough_values(self) -> Requirement:
        if self.minValues is not None and self.operator == "In" and len(self.values) < self.minValues:
            raise FieldRuleError(
                f"minValues is {self.minValues} but only {len(self.values)} values are listed",
                at=("minValues",),
                value=self.minValues,
            )
        return self


# --- taints -------------------------------------------------------------------------------------------------

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Taint(StrictModel):
    key: str
    effect: str
    value: str = ""
    timeAdded: str | None = None  # accepted (kubectl prints it), not used

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:
        return check_label_key(key)

    @field_validator("value")
    @classmethod
    def _value(cls, value: str) -> str:
        return check_label_value(value)

    @field_validator("effect")
    @classmethod
    def _effect(cls, effect: str) -> str:
        if effect not in TAINT_EFFECTS:
            raise ValueError(
                f"taint effect {effect!r} is not one of {', '.join(TAINT_EFFECTS)}"
                f"{suggestion(effect, TAINT_EFFECTS)}"
            )
        return effect


def check_distinct_taints(taints: list[Taint], startup_taints: list[Taint]) -> list[FieldRuleError]:
    """Karpenter refuses a key/effect pair that appears twice across taints and startupTaints: the kubelet
    cannot register a node carrying both (core `pkg/apis/v1/nodeclaim_validation.go`)."""
    seen: set[tuple[str, str]] = set()
    issues: list[FieldRuleError] = []
    for field, items in (("taints", taints), ("startupTaints", startup_taints)):
        for index, taint in enumerate(items):
            pair = (taint.key, taint.effect)
            if pair in seen:
                issues.append(
                    FieldRuleError(
                        f"duplicate taint key/effect pair {taint.key}:{taint.effect} (a node cannot carry both)",
                        at=(field, index, "key"),
                        value=taint.key,
                    )
                )
            seen.add(pair)
    return issues


# --- disruption budgets -------------------------------------------------------------------------------------

_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted")


class BudgetV1beta1(StrictModel):
    nodes: str = "10%"
    schedule: str | None = None
    duration: str | None = None

    @field_validator("nodes", mode="before")
    @classmethod
    def _nodes(cls, nodes: Any) -> Any:
        if isinstance(nodes, int) and not isinstance(nodes, bool):
            raise ValueError(f'nodes must be a string: write "{nodes}" (quoted) or a percentage like "10%"')
        if isinstance(nodes, str) and not _BUDGET_NODES.match(nodes):
            raise ValueError(
                f'nodes {nodes!r} is neither a whole number of nodes ("5") nor a percentage up to 100% ("10%")'
            )
        return nodes

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, schedule: str | None) -> str | None:
        if schedule is not None:
            try:
                cron.parse(schedule)
            except ValueError as exc:
                raise ValueError(f"schedule {schedule!r} is not a valid cron expression: {exc}") from None
        return schedule

    @field_validator("duration")
    @classmethod
    def _duration(cls, duration: str | None) -> str | None:
        if duration is not None:
            parse_duration(duration, allow_never=False, pattern=BUDGET)
        return duration

    @model_validator(mode="after")
    def _window(self) -> BudgetV1beta1:
        if self.schedule is not None and self.duration is None:
            raise FieldRuleError(
                "a budget with a schedule also needs a duration (how long the window stays open, e.g. 8h)",
                at=("duration",),
            )
        if self.duration is not None and self.schedule is None:
            raise FieldRuleError(
                "a budget with a duration also needs a schedule (when the window opens, a cron expression)",
                at=("schedule",),
            )
        return self

    def duration_seconds(self) -> int | None:
        return parse_duration(self.duration, allow_never=False, pattern=BUDGET) if self.duration else None


class BudgetV1(BudgetV1beta1):
    reasons: list[str] = []

    @field_validator("reasons")
    @classmethod
    def _reasons(cls, reasons: list[str]) -> list[str]:
        for index, reason in enumerate(reasons):
            if reason not in BUDGET_REASONS:
                raise FieldRuleError(
                    f"budget reason {reason!r} is not one of {', '.join(BUDGET_REASONS)}",
                    at=(index,),
                    value=reason,
                )
        return reasons


def check_hms_duration(value: str | None, *, allow_never: bool = True) -> str | None:
    if value is not None:
        parse_duration(value, allow_never=allow_never, pattern=HMS)
    return value
