"""The `karpenter.sh/v1alpha1` NodeOverlay schema, with the rules of Karpenter's CRD and webhook
(kubernetes-sigs/karpenter `pkg/apis/v1alpha1/nodeoverlay.go` markers and CEL, `nodeoverlay_validation.go`).

Rules: at most 100 requirements, each a node selector requirement whose key may be any well-known label
(`karpenter.sh/nodepool` included, unlike a NodePool's) or a custom one outside the restricted domains; `In`
and `NotIn` need values, `Gt`/`Lt`/`Gte`/`Lte` exactly one non-negative integer. `priceAdjustment` is a signed
amount (`+0.5`, `-0.25`) or a signed percentage (`+10%`, or `-N%` down to `-100%`); `price` an unsigned decimal
(`0.42`); the two are exclusive. `capacity` holds extended resources only (not cpu, memory,
ephemeral-storage or pods). `weight` is 1 to 10000 (absent means 0).
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.
# ruff: noqa: RUF012

from __future__ import annotations

import re

from pydantic import field_validator, model_validator

from longshore.config.schema.base import (
    FieldRuleError,
    Metadata,
    Quantity,
    RequirementV1alpha5,
    StrictModel,
    check_label_key,
    pool_label_reason,
)
from longshore.core import quantity
from longshore.core.labels import NODEPOOL, normalize_key

OVERLAY_API_VERSION = "karpenter.sh/v1alpha1"
PRICE_ADJUSTMENT = re.compile(r"^(([+-](\d*\.?\d+))|(\+\d*\.?\d+%)|(-\d{1,2}(\.\d+)?%)|(-100%))$")
PRICE = re.compile(r"^\d+(\.\d+)?$")
RESTRICTED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")
MAX_REQUIREMENTS = 100


class OverlayRequirement(RequirementV1alpha5):
    """A requirement of an overlay: as a NodePool's, but it may select `karpenter.sh/nodepool`."""

    @field_validator("key")
    @classmethod
    def _key(cls, key: str) -> str:  # type: ignore[override]
        check_label_key(key)
        reason = None if normalize_key(key) == NODEPOOL else pool_label_reason(key, "v1")
        if reason:
            raise ValueError(reason)
        return key

    @model_validator(mode="after")
    def _not_in_values(self) -> OverlayRequirement:
        if self.operator == "NotIn" and not self.values:
            raise FieldRuleError(
                f"operator NotIn needs at least one value (key {self.key!r})", at=("values",)
            )
        return self


class NodeOverlaySpec(StrictModel):
    requirements: list[OverlayRequirement]
    priceAdjustment: str | None = None
    price: str | None = None
    capacity: dict[str, Quantity] = {}
    weight: int | None = None

    @field_validator("requirements")
    @classmethod
    def _count(cls, requirements: list[OverlayRequirement]) -> list[OverlayRequirement]:
        if len(requirements) > MAX_REQUIREMENTS:
            raise ValueError(f"at most {MAX_REQUIREMENTS} requirements are allowed, got {len(requirements)}")
        return requirements

    @field_validator("priceAdjustment")
    @classmethod
    def _adjustment(cls, value: str | None) -> str | None:
        if value is not None and not PRICE_ADJUSTMENT.match(value):
            raise ValueError(
                f"priceAdjustment {value!r} is not a signed amount (+0.5, -0.25) or a signed percentage "
                "(+10%, -15%, at least -100%)"
            )
        return value

    @field_validator("price")
    @classmethod
    def _price(cls, value: str | None) -> str | None:
        if value is not None and not PRICE.match(value):
            raise ValueError(f"price {value!r} is not an unsigned decimal such as 0.42 (a string)")
        return value

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, capacity: dict[str, str]) -> dict[str, str]:
        for name, amount in capacity.items():
            if name in RESTRICTED_CAPACITY:
                raise FieldRuleError(
                    f"capacity may only add extended resources; {name} is not one "
                    f"(not {', '.join(RESTRICTED_CAPACITY)})",
                    at=(name,),
                    value=name,
                )
            try:
                check_label_key(name)
            except ValueError:
                raise FieldRuleError(
                    f"{name!r} is not a valid resource name", at=(name,), value=name
                ) from None
            if quantity.parse(name, amount) < 0:
                raise FieldRuleError(
                    f"capacity {name} must not be negative, got {amount}", at=(name,), value=amount
                )
        return capacity

    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: int | None) -> int | None:
        if weight is not None and not 1 <= weight <= 10000:
            raise ValueError(f"weight must be between 1 and 10000, got {weight}")
        return weight

    @model_validator(mode="after")
    def _exclusive(self) -> NodeOverlaySpec:
        if self.price is not None and self.priceAdjustment is not None:
            raise FieldRuleError(
                "cannot set both 'price' and 'priceAdjustment'",
                at=("priceAdjustment",),
                value=self.priceAdjustment,
            )
        return self


class NodeOverlay(StrictModel):
    apiVersion: str
    kind: str
    metadata: Metadata
    spec: NodeOverlaySpec
    status: object = None
