"""Schema of the v1alpha5 era (Karpenter <= v0.31): `karpenter.sh/v1alpha5 Provisioner` and
`karpenter.k8s.aws/v1alpha1 AWSNodeTemplate`, including the Provisioner's deprecated inline `provider`.

Theory of operation: the field sets are those of core `pkg/apis/v1alpha5/provisioner.go` and aws
`pkg/apis/v1alpha1/awsnodetemplate.go`/`provider.go` at v0.31.5. Karpenter's webhook rules that relate fields
(exactly one of `provider`/`providerRef`; `consolidation.enabled` excludes `ttlSecondsAfterEmpty`; a launch
template excludes the settings it already carries) are model validators that report every violation of an
object at once.
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.
# ruff: noqa: RUF012

from __future__ import annotations

from pydantic import field_validator, model_validator

from longshore.config.schema.base import (
    FieldRuleError,
    Metadata,
    PoolMetadata,
    Quantity,
    RequirementV1alpha5,
    StrictModel,
    Taint,
    check_pool_labels,
    raise_all,
)
from longshore.config.schema.ec2 import BlockDeviceMappingV1alpha5, MetadataOptions, check_tags
from longshore.config.schema.kubelet import KubeletV1alpha5

AMI_FAMILIES_V1ALPHA1 = ("AL2", "Bottlerocket", "Ubuntu", "Windows2019", "Windows2022", "Custom")


def check_selector(selector: dict[str, str]) -> dict[str, str]:
    for key, value in selector.items():
        if not key or not value:
            raise FieldRuleError("empty selector keys or values are not supported", at=(key,), value=value)
    return selector


class ProviderRef(StrictModel):
    name: str
    kind: str = "AWSNodeTemplate"
    apiVersion: str = "karpenter.k8s.aws/v1alpha1"

    @field_validator("kind")
    @classmethod
    def _kind(cls, kind: str) -> str:
        if kind != "AWSNodeTemplate":
            raise ValueError(
                f"providerRef kind {kind!r} is not supported; a Provisioner refers to an AWSNodeTemplate"
            )
        return kind


class Consolidation(StrictModel):
    enabled: bool = False


class Limits(StrictModel):
    resources: dict[str, Quantity] = {}


class AWSProvider(StrictModel):
    """The launch settings shared by the inline `provider` and an AWSNodeTemplate's spec."""

    subnetSelector: dict[str, str] | None = None
    securityGroupSelector: dict[str, str] | None = None
    instanceProfile: str | None = None
    amiFamily: str | None = None
    context: str | None = None
    launchTemplate: str | None = None
    tags: dict[str, str] = {}
    metadataOptions: MetadataOptions | None = None
    blockDeviceMappings: list[BlockDeviceMappingV1alpha5] = []

    @field_validator("subnetSelector", "securityGroupSelector")
    @classmethod
    def _selector(cls, selector: dict[str, str] | None) -> dict[str, str] | None:
        return None if selector is None else check_selector(selector)

    @field_validator("amiFamily")
    @classmethod
    def _ami_family(cls, family: str | None) -> str | None:
        if family is not None and family not in AMI_FAMILIES_V1ALPHA1:
            raise ValueError(f"amiFamily {family!r} is not one of {', '.join(AMI_FAMILIES_V1ALPHA1)}")
        return family

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str]) -> dict[str, str]:
        return check_tags(tags)

    def launch_rules(self) -> list[FieldRuleError]:
        issues: list[FieldRuleError] = []
        if self.subnetSelector is None:
            issues.append(
                FieldRuleError(
                    "subnetSelector is required (for example {karpenter.sh/discovery: <cluster>})",
                    at=("subnetSelector",),
                )
            )
        if self.launchTemplate is None and self.securityGroupSelector is None:
            issues.append(
                FieldRuleError(
                    "securityGroupSelector is required unless launchTemplate is set",
                    at=("securityGroupSelector",),
                )
            )
        if self.launchTemplate is not None:
            for name in ("securityGroupSelector", "metadataOptions", "blockDeviceMappings"):
                if getattr(self, name):
                    issues.append(
                        FieldRuleError(
                            f"launchTemplate and {name} cannot be used together: the launch template already "
                            f"sets {name}",
                            at=(name,),
                        )
                    )
        return issues


class InlineProvider(AWSProvider):
    """The deprecated `spec.provider` of a Provisioner (may carry its own apiVersion/kind)."""

    apiVersion: str | None = None
    kind: str | None = None

    @model_validator(mode="after")
    def _rules(self) -> InlineProvider:
        raise_all(self.launch_rules())
        return self


class AWSNodeTemplateSpec(AWSProvider):
    amiSelector: dict[str, str] | None = None
    userData: str | None = None
    detailedMonitoring: bool = False

    @field_validator("amiSelector")
    @classmethod
    def _ami_selector(cls, selector: dict[str, str] | None) -> dict[str, str] | None:
        return None if selector is None else check_selector(selector)

    @model_validator(mode="after")
    def _rules(self) -> AWSNodeTemplateSpec:
        issues = self.launch_rules()
        if self.amiFamily == "Custom" and not self.amiSelector:
            issues.append(
                FieldRuleError("amiFamily Custom needs an amiSelector naming the AMIs", at=("amiSelector",))
            )
        if self.launchTemplate is not None and self.userData is not None:
            issues.append(
                FieldRuleError("launchTemplate and userData cannot be used together", at=("userData",))
            )
        raise_all(issues)
        return self


class ProvisionerSpec(StrictModel):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    taints: list[Taint] = []
    startupTaints: list[Taint] = []
    requirements: list[RequirementV1alpha5] = []
    kubeletConfiguration: KubeletV1alpha5 | None = None
    provider: InlineProvider | None = None
    providerRef: ProviderRef | None = None
    ttlSecondsAfterEmpty: int | None = None
    ttlSecondsUntilExpired: int | None = None
    limits: Limits | None = None
    weight: int | None = None
    consolidation: Consolidation | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, labels: dict[str, str]) -> dict[str, str]:
        return check_pool_labels(labels, "v1alpha5")

    @field_validator("ttlSecondsAfterEmpty", "ttlSecondsUntilExpired")
    @classmethod
    def _seconds(cls, seconds: int | None) -> int | None:
        if seconds is not None and seconds < 0:
            raise ValueError(f"must be a non-negative number of seconds, got {seconds}")
        return seconds

    @field_validator("weight")
    @classmethod
    def _weight(cls, weight: int | None) -> int | None:
        if weight is not None and not 1 <= weight <= 100:
            raise ValueError(f"weight {weight} is outside 1-100")
        return weight

    @model_validator(mode="after")
    def _rules(self) -> ProvisionerSpec:
        issues: list[FieldRuleError] = []
        if self.provider is None and self.providerRef is None:
            issues.append(
                FieldRuleError(
                    "providerRef is missing: name the AWSNodeTemplate this Provisioner launches nodes with "
                    "(providerRef: {name: <template>}), or give an inline provider",
                    at=("providerRef",),
                )
            )
        if self.provider is not None and self.providerRef is not None:
            issues.append(
                FieldRuleError("provider and providerRef cannot be used together; keep one", at=("provider",))
            )
        if (
            self.consolidation is not None
            and self.consolidation.enabled
            and self.ttlSecondsAfterEmpty is not None
        ):
            issues.append(
                FieldRuleError(
                    "consolidation.enabled and ttlSecondsAfterEmpty cannot be used together: consolidation "
                    "already removes empty nodes; drop ttlSecondsAfterEmpty or disable consolidation",
                    at=("ttlSecondsAfterEmpty",),
                    value=self.ttlSecondsAfterEmpty,
                )
            )
        raise_all(issues)
        return self


class Provisioner(StrictModel):
    apiVersion: str
    kind: str
    metadata: PoolMetadata
    spec: ProvisionerSpec
    status: object = None


class AWSNodeTemplate(StrictModel):
    apiVersion: str
    kind: str
    metadata: Metadata
    spec: AWSNodeTemplateSpec
    status: object = None
