"""The CapacityBuffer (`autoscaling.x-k8s.io/v1alpha1`) and PodTemplate (`v1`) documents of a cluster config.

Rules (SIG Autoscaling's API, kubernetes/autoscaler `cluster-autoscaler/apis/capacitybuffer/
autoscaling.x-k8s.io/v1alpha1/types.go`, plus what Longshore can act on, as `core.buffers.parse_buffer`):
exactly one of `podTemplateRef` and `scalableRef`, each with a non-empty `name`; a `scalableRef.kind` of
Deployment, ReplicaSet or StatefulSet; `provisioningStrategy` absent or `buffer.x-k8s.io/active-capacity`;
`replicas` and `percentage` non-negative integers, `percentage` only with a `scalableRef`; `limits` a map of
resource to quantity. A PodTemplate carries `template.spec` with at least one container, read as a pod (its
requests, labels, selectors, tolerations). Unknown fields are errors, as everywhere in the config.
`metadata.namespace` defaults to `default`.
"""

# ruff: noqa: RUF012

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, field_validator, model_validator

from longshore.config.schema.base import FieldRuleError, Metadata, Quantity, StrictModel, check_object_name
from longshore.core.buffers import ACTIVE_CAPACITY, SCALABLE_KINDS
from longshore.core.pod_manifest import PodManifestError, pod_from_manifest
from longshore.core.quantity import QuantityError

BUFFER_API_VERSION = "autoscaling.x-k8s.io/v1alpha1"


class NamespacedMetadata(Metadata):
    namespace: str = "default"

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, namespace: str) -> str:
        return check_object_name(namespace)


class LocalObjectRef(StrictModel):
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not name:
            raise ValueError("must not be empty")
        return name


class ScalableRef(StrictModel):
    apiGroup: str = "apps"
    kind: str
    name: str

    @field_validator("kind")
    @classmethod
    def _kind(cls, kind: str) -> str:
        if kind not in SCALABLE_KINDS:
            raise ValueError(f"{kind!r} is not one of {', '.join(SCALABLE_KINDS)}")
        return kind

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not name:
            raise ValueError("must not be empty")
        return name


class CapacityBufferSpec(StrictModel):
    provisioningStrategy: str = ACTIVE_CAPACITY
    podTemplateRef: LocalObjectRef | None = None
    scalableRef: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: dict[str, Quantity] = {}

    @field_validator("provisioningStrategy")
    @classmethod
    def _strategy(cls, strategy: str) -> str:
        if strategy != ACTIVE_CAPACITY:
            raise ValueError(f"{strategy!r} is not supported; Longshore acts on {ACTIVE_CAPACITY} only")
        return strategy

    @field_validator("replicas", "percentage")
    @classmethod
    def _count(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"{value} is negative; use a non-negative integer")
        return value

    @model_validator(mode="after")
    def _refs(self) -> CapacityBufferSpec:
        if (self.podTemplateRef is None) == (self.scalableRef is None):
            both = "both are set" if self.podTemplateRef is not None else "neither is set"
            raise FieldRuleError(f"set exactly one of podTemplateRef and scalableRef ({both})")
        if self.percentage is not None and self.scalableRef is None:
            raise FieldRuleError(
                f"percentage {self.percentage} needs scalableRef (a percentage of a workload's replicas)",
                at=("percentage",),
                value=self.percentage,
            )
        return self


class CapacityBufferDocument(StrictModel):
    apiVersion: str
    kind: str
    metadata: NamespacedMetadata
    spec: CapacityBufferSpec
    status: object = None


class PodTemplateDocument(StrictModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    apiVersion: str
    kind: str
    metadata: NamespacedMetadata
    template: dict[str, Any]

    @field_validator("template")
    @classmethod
    def _template(cls, template: dict[str, Any]) -> dict[str, Any]:
        spec = template.get("spec")
        if not isinstance(spec, dict) or not spec.get("containers"):
            raise FieldRuleError("needs at least one container", at=("spec", "containers"))
        try:
            pod_from_manifest({"metadata": template.get("metadata") or {}, "spec": spec})
        except (PodManifestError, QuantityError, ValueError) as error:
            raise FieldRuleError(f"not a readable pod template: {error}", at=("spec",)) from None
        return template
