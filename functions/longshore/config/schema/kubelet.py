"""Kubelet settings Karpenter passes to nodes (v1alpha5 `kubeletConfiguration`, v1beta1 NodePool and v1
EC2NodeClass `kubelet`), with the rules of the CRDs: reserved resources, eviction signals and thresholds, grace
periods that match a soft threshold (and the other way round), image GC thresholds.
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.
# ruff: noqa: RUF012

from __future__ import annotations

import re

from pydantic import field_validator, model_validator

from longshore.config.schema.base import FieldRuleError, Quantity, StrictModel
from longshore.core import quantity

# --- kubelet ------------------------------------------------------------------------------------------------

RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
_PERCENT = re.compile(r"^(100|[0-9]{1,2}(\.[0-9]+)?)%$")
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def _check_reserved(values: dict[str, str]) -> dict[str, str]:
    for key, amount in values.items():
        if key not in RESERVED_KEYS:
            raise FieldRuleError(
                f"{key!r} cannot be reserved; use one of {', '.join(RESERVED_KEYS)}", at=(key,), value=key
            )
        try:
            quantity.parse_decimal(amount)
        except quantity.QuantityError as exc:
            raise FieldRuleError(str(exc), at=(key,), value=amount) from None
    return values


def _check_eviction(values: dict[str, str]) -> dict[str, str]:
    for key, threshold in values.items():
        if key not in EVICTION_SIGNALS:
            raise FieldRuleError(
                f"{key!r} is not an eviction signal; use one of {', '.join(EVICTION_SIGNALS)}",
                at=(key,),
                value=key,
            )
        if not _PERCENT.match(threshold):
            try:
                quantity.parse_decimal(threshold)
            except quantity.QuantityError:
                raise FieldRuleError(
                    f"eviction threshold {threshold!r} is neither a percentage (10%) nor a quantity (500Mi)",
                    at=(key,),
                    value=threshold,
                ) from None
    return values


class KubeletV1(StrictModel):
    """Kubelet settings Karpenter passes to nodes (v1beta1 NodePool, v1 EC2NodeClass)."""

    clusterDNS: list[str] = []
    maxPods: int | None = None
    podsPerCore: int | None = None
    systemReserved: dict[str, Quantity] = {}
    kubeReserved: dict[str, Quantity] = {}
    evictionHard: dict[str, str] = {}
    evictionSoft: dict[str, str] = {}
    evictionSoftGracePeriod: dict[str, str] = {}
    evictionMaxPodGracePeriod: int | None = None
    imageGCHighThresholdPercent: int | None = None
    imageGCLowThresholdPercent: int | None = None
    cpuCFSQuota: bool | None = None

    @field_validator("maxPods", "podsPerCore", "evictionMaxPodGracePeriod")
    @classmethod
    def _non_negative(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"must not be negative, got {value}")
        return value

    @field_validator("imageGCHighThresholdPercent", "imageGCLowThresholdPercent")
    @classmethod
    def _percent(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= 100:
            raise ValueError(f"must be a percentage between 0 and 100, got {value}")
        return value

    @field_validator("systemReserved", "kubeReserved")
    @classmethod
    def _reserved(cls, values: dict[str, str]) -> dict[str, str]:
        return _check_reserved(values)

    @field_validator("evictionHard", "evictionSoft")
    @classmethod
    def _eviction(cls, values: dict[str, str]) -> dict[str, str]:
        return _check_eviction(values)

    @field_validator("evictionSoftGracePeriod")
    @classmethod
    def _grace(cls, values: dict[str, str]) -> dict[str, str]:
        for key, period in values.items():
            if key not in EVICTION_SIGNALS:
                raise FieldRuleError(
                    f"{key!r} is not an eviction signal; use one of {', '.join(EVICTION_SIGNALS)}",
                    at=(key,),
                    value=key,
                )
            if not _GO_DURATION.match(period):
                raise FieldRuleError(
                    f"{period!r} is not a duration (use forms like 1m or 1m30s)", at=(key,), value=period
                )
        return values

    @model_validator(mode="after")
    def _consistent(self) -> KubeletV1:
        high, low = self.imageGCHighThresholdPercent, self.imageGCLowThresholdPercent
        if high is not None and low is not None and high <= low:
            raise FieldRuleError(
                f"imageGCHighThresholdPercent ({high}) must be greater than imageGCLowThresholdPercent ({low})",
                at=("imageGCHighThresholdPercent",),
                value=high,
            )
        for signal in self.evictionSoft:
            if signal not in self.evictionSoftGracePeriod:
                raise FieldRuleError(
                    f"evictionSoft sets {signal!r} but evictionSoftGracePeriod gives it no grace period",
                    at=("evictionSoft", signal),
                    value=signal,
                )
        for signal in self.evictionSoftGracePeriod:
            if signal not in self.evictionSoft:
                raise FieldRuleError(
                    f"evictionSoftGracePeriod gives {signal!r} a grace period but evictionSoft sets no threshold",
                    at=("evictionSoftGracePeriod", signal),
                    value=signal,
                )
        return self


class KubeletV1alpha5(KubeletV1):
    """v1alpha5 `kubeletConfiguration`: the v1 fields plus `containerRuntime`."""

    containerRuntime: str | None = None

    @field_validator("containerRuntime")
    @classmethod
    def _runtime(cls, runtime: str | None) -> str | None:
        if runtime is not None and runtime not in ("containerd", "dockerd"):
            raise ValueError(f"containerRuntime {runtime!r} is not one of containerd, dockerd")
        return runtime
