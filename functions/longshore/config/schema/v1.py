"""Schema of `karpenter.sh/v1beta1` and `v1` NodePool (EC2NodeClass is in `schema.nodeclass`).

Theory of operation: each v1 model extends its v1beta1 counterpart with the fields v1 added (budget
`reasons`, `minValues` exists in both, `nodeClassRef.group`, `expireAfter` and `terminationGracePeriod` on the
template, EC2NodeClass `kubelet`, `alias`/`ssmParameter` AMI terms, capacity reservations ...), or replaces a
block whose shape changed (`disruption`, `nodeClassRef`). The CEL rules of the CRDs (core `pkg/apis/v1/*.go`,
aws `pkg/apis/v1/ec2nodeclass.go`) are model validators that report every violation of an object at once.
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.
# ruff: noqa: RUF012

from __future__ import annotations

from pydantic import ValidationInfo, field_validator, model_validator

from longshore.config.schema.base import (
    BudgetV1,
    BudgetV1beta1,
    FieldRuleError,
    PoolMetadata,
    Quantity,
    Requirement,
    StrictModel,
    Taint,
    check_distinct_taints,
    check_hms_duration,
    check_pool_labels,
    dialect_of,
    raise_all,
)
from longshore.config.schema.kubelet import KubeletV1

# --- NodePool -----------------------------------------------------------------------------------------------


class TemplateMetadata(StrictModel):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return check_pool_labels(labels, dialect_of(info))


class NodeClassRefV1beta1(StrictModel):
    name: str
    kind: str = "EC2NodeClass"
    apiVersion: str = "karpenter.k8s.aws/v1beta1"

    @field_validator("kind")
    @classmethod
    def _kind(cls, kind: str) -> str:
        if kind != "EC2NodeClass":
            raise ValueError(
                f"nodeClassRef kind {kind!r} is not supported; Longshore launches EC2NodeClass nodes"
            )
        return kind


class NodeClassRefV1(StrictModel):
    group: str
    kind: str
    name: str

    @field_validator("group")
    @classmethod
    def _group(cls, group: str) -> str:
        if group != "karpenter.k8s.aws":
            raise ValueError(f"nodeClassRef group {group!r} is not supported; use karpenter.k8s.aws")
        return group

    @field_validator("kind")
    @classmethod
    def _kind(cls, kind: str) -> str:
        if kind != "EC2NodeClass":
            raise ValueError(f"nodeClassRef kind {kind!r} is not supported; use EC2NodeClass")
        return kind


class _TemplateSpecBase(StrictModel):
    requirements: list[Requirement] = []
    taints: list[Taint] = []
    startupTaints: list[Taint] = []

    @field_validator("requirements")
    @classmethod
    def _at_most_100(cls, requirements: list[Requirement]) -> list[Requirement]:
        if len(requirements) > 100:
            raise ValueError(f"at most 100 requirements are allowed, got {len(requirements)}")
        return requirements

    @model_validator(mode="after")
    def _distinct_taints(self) -> _TemplateSpecBase:
        raise_all(check_distinct_taints(self.taints, self.startupTaints))
        return self


class TemplateSpecV1beta1(_TemplateSpecBase):
    nodeClassRef: NodeClassRefV1beta1
    kubelet: KubeletV1 | None = None


class TemplateSpecV1(_TemplateSpecBase):
    nodeClassRef: NodeClassRefV1
    expireAfter: str = "720h"
    terminationGracePeriod: str | None = None

    @field_validator("expireAfter")
    @classmethod
    def _expire_after(cls, value: str) -> str:
        check_hms_duration(value)
        return value

    @field_validator("terminationGracePeriod")
    @classmethod
    def _grace(cls, value: str | None) -> str | None:
        return check_hms_duration(value, allow_never=False)


class TemplateV1beta1(StrictModel):
    metadata: TemplateMetadata = TemplateMetadata()
    spec: TemplateSpecV1beta1


class TemplateV1(StrictModel):
    metadata: TemplateMetadata = TemplateMetadata()
    spec: TemplateSpecV1


class DisruptionV1beta1(StrictModel):
    consolidationPolicy: str = "WhenUnderutilized"
    consolidateAfter: str | None = None
    expireAfter: str = "720h"
    budgets: list[BudgetV1beta1] = [BudgetV1beta1()]

    @field_validator("consolidationPolicy")
    @classmethod
    def _policy(cls, policy: str) -> str:
        if policy not in ("WhenEmpty", "WhenUnderutilized"):
            hint = (
                " (WhenEmptyOrUnderutilized is the karpenter.sh/v1 name)"
                if policy == "WhenEmptyOrUnderutilized"
                else ""
            )
            raise ValueError(
                f"consolidationPolicy {policy!r} is not one of WhenEmpty, WhenUnderutilized{hint}"
            )
        return policy

    @field_validator("consolidateAfter", "expireAfter")
    @classmethod
    def _durations(cls, value: str | None) -> str | None:
        return check_hms_duration(value)

    @field_validator("budgets")
    @classmethod
    def _at_most_50(cls, budgets: list[BudgetV1beta1]) -> list[BudgetV1beta1]:
        if len(budgets) > 50:
            raise ValueError(f"at most 50 budgets are allowed, got {len(budgets)}")
        return budgets

    @model_validator(mode="after")
    def _rules(self) -> DisruptionV1beta1:
        if self.consolidationPolicy == "WhenUnderutilized" and self.consolidateAfter not in (None, "Never"):
            raise FieldRuleError(
                "consolidateAfter cannot be combined with consolidationPolicy WhenUnderutilized "
                "(in karpenter.sh/v1beta1 it only applies to WhenEmpty; 'Never' turns consolidation off)",
                at=("consolidateAfter",),
                value=self.consolidateAfter,
            )
        if self.consolidationPolicy == "WhenEmpty" and self.consolidateAfter is None:
            raise FieldRuleError(
                "consolidationPolicy WhenEmpty needs consolidateAfter (how long a node stays empty, e.g. 30s)",
                at=("consolidateAfter",),
            )
        return self


class DisruptionV1(StrictModel):
    consolidationPolicy: str = "WhenEmptyOrUnderutilized"
    consolidateAfter: str = "0s"
    budgets: list[BudgetV1] = [BudgetV1()]

    @field_validator("consolidationPolicy")
    @classmethod
    def _policy(cls, policy: str) -> str:
        allowed = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
        if policy not in allowed:
            hint = (
                " (WhenUnderutilized is the v1beta1 name; v1 calls it WhenEmptyOrUnderutilized)"
                if policy == "WhenUnderutilized"
                else ""
            )
            raise ValueError(f"consolidationPolicy {policy!r} is not one of {', '.join(allowed)}{hint}")
        return policy

    @field_validator("consolidateAfter")
    @classmethod
    def _consolidate_after(cls, value: str) -> str:
        check_hms_duration(value)
        return value

    @field_validator("budgets")
    @classmethod
    def _at_most_50(cls, budgets: list[BudgetV1]) -> list[BudgetV1]:
        if len(budgets) > 50:
            raise ValueError(f"at most 50 budgets are allowed, got {len(budgets)}")
        return budgets


def _check_weight(weight: int | None) -> int | None:
    if weight is not None and not 1 <= weight <= 100:
        raise ValueError(f"weight {weight} is outside 1-100")
    return weight


class NodePoolSpecV1beta1(StrictModel):
    template: TemplateV1beta1
    disruption: DisruptionV1beta1 = DisruptionV1beta1()
    limits: dict[str, Quantity] = {}
    weight: int | None = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: int | None) -> int | None:
        return _check_weight(weight)


class NodePoolSpecV1(StrictModel):
    template: TemplateV1
    disruption: DisruptionV1 = DisruptionV1()
    limits: dict[str, Quantity] = {}
    weight: int | None = None
    replicas: int | None = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: int | None) -> int | None:
        return _check_weight(weight)

    @field_validator("replicas")
    @classmethod
    def _replicas(cls, replicas: int | None) -> int | None:
        if replicas is not None and replicas < 0:
            raise ValueError(f"replicas must not be negative, got {replicas}")
        return replicas

    @model_validator(mode="after")
    def _static(self) -> NodePoolSpecV1:
        if self.replicas is None:
            return self
        issues = [
            FieldRuleError(
                f"a static NodePool (replicas) only takes limits.nodes, not limits.{resource!r}",
                at=("limits", resource),
                value=resource,
            )
            for resource in self.limits
            if resource != "nodes"
        ]
        if self.weight is not None:
            issues.append(
                FieldRuleError(
                    "a static NodePool (replicas) cannot have a weight", at=("weight",), value=self.weight
                )
            )
        raise_all(issues)
        return self


class NodePoolV1beta1(StrictModel):
    apiVersion: str
    kind: str
    metadata: PoolMetadata
    spec: NodePoolSpecV1beta1
    status: object = None


class NodePoolV1(StrictModel):
    apiVersion: str
    kind: str
    metadata: PoolMetadata
    spec: NodePoolSpecV1
    status: object = None
