"""EC2 launch settings shared by AWSNodeTemplate (v1alpha1) and EC2NodeClass (v1beta1, v1): block devices,
instance metadata options, resource tags.

Theory of operation: these objects have the same shape in every dialect; what differs is defaults (the IMDS
hop limit is 2 before v1 and 1 in v1) and the accepted spelling of a volume size (v1alpha5 took any quantity or
a bare number of GiB; v1beta1 and v1 take `<n>Gi|G|Ti|T`). Defaults are therefore left as `None` here and
filled by `config.normalise`, which knows the dialect; the volume size is turned into whole GiB at parse time.
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo, field_validator, model_validator

from longshore.config.schema.base import FieldRuleError, StrictModel, dialect_of
from longshore.core import quantity

_GIB = 2**30
_V1_VOLUME_SIZE = re.compile(r"^([1-9][0-9]*)(Gi|G|Ti|T)$")
_UNIT_BYTES = {"Gi": Decimal(_GIB), "G": Decimal(10**9), "Ti": Decimal(2**40), "T": Decimal(10**12)}
MAX_VOLUME_GIB = 64000
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")


def _volume_size_gib(value: Any, info: ValidationInfo) -> int:
    """Whole GiB for a volume size; v1alpha5 also accepts a bare number (GiB) or any quantity."""
    if isinstance(value, bool):
        raise ValueError(f"expected a volume size such as 50Gi, got {value!r}")
    if dialect_of(info) == "v1alpha5":
        if isinstance(value, int):
            gib = value
        elif isinstance(value, str):
            try:
                gib = math.ceil(quantity.parse_decimal(value) / _GIB)
            except quantity.QuantityError:
                raise ValueError(f"volumeSize {value!r} is not a size such as 50Gi or 100G") from None
        else:
            raise ValueError(f"expected a volume size such as 50Gi, got {value!r}")
    else:
        match = _V1_VOLUME_SIZE.match(value) if isinstance(value, str) else None
        if match is None:
            raise ValueError(
                f"volumeSize {value!r} must be a whole number with a unit Gi, G, Ti or T (e.g. 50Gi)"
            )
        gib = math.ceil(int(match.group(1)) * _UNIT_BYTES[match.group(2)] / _GIB)
    if not 1 <= gib <= MAX_VOLUME_GIB:
        raise ValueError(f"volumeSize {value!r} is outside 1Gi-{MAX_VOLUME_GIB}Gi")
    return gib


VolumeSizeGiB = Annotated[int, BeforeValidator(_volume_size_gib)]


class BlockDevice(StrictModel):
    deleteOnTermination: bool | None = None
    encrypted: bool | None = None
    iops: int | None = None
    kmsKeyID: str | None = None
    snapshotID: str | None = None
    throughput: int | None = None
    volumeSize: VolumeSizeGiB | None = None
    volumeType: str | None = None

    @field_validator("volumeType")
    @classmethod
    def _volume_type(cls, volume_type: str | None) -> str | None:
        if volume_type is not None and volume_type not in VOLUME_TYPES:
            raise ValueError(f"volumeType {volume_type!r} is not one of {', '.join(VOLUME_TYPES)}")
        return volume_type

    @field_validator("iops", "throughput")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(f"must be a positive integer, got {value}")
        return value


class BlockDeviceV1(BlockDevice):
    volumeInitializationRate: int | None = None

    @field_validator("volumeInitializationRate")
    @classmethod
    def _rate(cls, value: int | None) -> int | None:
        if value is not None and not 100 <= value <= 300:
            raise ValueError(f"volumeInitializationRate must be between 100 and 300 MiB/s, got {value}")
        return value

    @model_validator(mode="after")
    def _source(self) -> BlockDeviceV1:
        if self.snapshotID is None and self.volumeSize is None:
            raise FieldRuleError("an ebs volume needs a snapshotID or a volumeSize", at=("volumeSize",))
        if self.volumeInitializationRate is not None and not self.snapshotID:
            raise FieldRuleError(
                "volumeInitializationRate needs a snapshotID (it sets how fast the snapshot is restored)",
                at=("volumeInitializationRate",),
                value=self.volumeInitializationRate,
            )
        return self


class BlockDeviceMappingV1alpha5(StrictModel):
    deviceName: str
    ebs: BlockDevice | None = None


class BlockDeviceMappingV1beta1(StrictModel):
    deviceName: str
    ebs: BlockDevice | None = None
    rootVolume: bool = False


class BlockDeviceMappingV1(StrictModel):
    deviceName: str
    ebs: BlockDeviceV1 | None = None
    rootVolume: bool = False


class MetadataOptions(StrictModel):
    """Instance metadata service options; unset fields take the dialect's default in `normalise`."""

    httpEndpoint: str | None = None
    httpProtocolIPv6: str | None = None
    httpPutResponseHopLimit: int | None = None
    httpTokens: str | None = None

    @field_validator("httpEndpoint", "httpProtocolIPv6")
    @classmethod
    def _enabled_disabled(cls, value: str | None) -> str | None:
        if value is not None and value not in ("enabled", "disabled"):
            raise ValueError(f"{value!r} is not one of enabled, disabled")
        return value

    @field_validator("httpTokens")
    @classmethod
    def _tokens(cls, value: str | None) -> str | None:
        if value is not None and value not in ("required", "optional"):
            raise ValueError(f"{value!r} is not one of required, optional")
        return value

    @field_validator("httpPutResponseHopLimit")
    @classmethod
    def _hop_limit(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= 64:
            raise ValueError(f"httpPutResponseHopLimit must be between 1 and 64, got {value}")
        return value


#: Tags Longshore (like Karpenter) sets itself on instances; users may not set them.
RESTRICTED_TAG_KEYS = (
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.sh/provisioner-name",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
    "longshore.io/cluster",
)
RESTRICTED_TAG_PREFIXES = ("kubernetes.io/cluster",)


def check_tags(tags: dict[str, str]) -> dict[str, str]:
    for key in tags:
        if not key:
            raise FieldRuleError("empty tag keys are not supported", at=(key,), value=key)
        if key in RESTRICTED_TAG_KEYS or key.startswith(RESTRICTED_TAG_PREFIXES):
            raise FieldRuleError(
                f"tag {key!r} is restricted: Longshore sets it on every instance it launches",
                at=(key,),
                value=key,
            )
    return tags
