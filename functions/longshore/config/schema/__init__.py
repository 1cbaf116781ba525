"""Pydantic schemas of every document kind Longshore reads, and the registry that picks one by apiVersion/kind.

Theory of operation: `KINDS` maps `(apiVersion, kind)` to the schema that validates it and the dialect whose
semantics it carries (`v1alpha5`, `v1beta1`, `v1`). The loader looks a document up here; an unknown pair
gets an error that lists what is supported, with a suggestion for a misspelt kind or a hint for a kind known
under another apiVersion.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from longshore.config.schema.buffer import BUFFER_API_VERSION, CapacityBufferDocument, PodTemplateDocument
from longshore.config.schema.cluster import CLUSTER_API_VERSION, Cluster
from longshore.config.schema.nodeclass import EC2NodeClassV1, EC2NodeClassV1beta1
from longshore.config.schema.overlay import OVERLAY_API_VERSION, NodeOverlay
from longshore.config.schema.v1 import NodePoolV1, NodePoolV1beta1
from longshore.config.schema.v1alpha5 import AWSNodeTemplate, Provisioner


@dataclass(frozen=True, slots=True)
class KindSchema:
    model: type[BaseModel]
    dialect: str  # "v1alpha5" | "v1beta1" | "v1"
    role: str  # "pool" | "class" | "cluster" | "overlay" | "buffer" | "podtemplate"


KINDS: dict[tuple[str, str], KindSchema] = {
    ("karpenter.sh/v1alpha5", "Provisioner"): KindSchema(Provisioner, "v1alpha5", "pool"),
    ("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate"): KindSchema(AWSNodeTemplate, "v1alpha5", "class"),
    ("karpenter.sh/v1beta1", "NodePool"): KindSchema(NodePoolV1beta1, "v1beta1", "pool"),
    ("karpenter.sh/v1", "NodePool"): KindSchema(NodePoolV1, "v1", "pool"),
    ("karpenter.k8s.aws/v1beta1", "EC2NodeClass"): KindSchema(EC2NodeClassV1beta1, "v1beta1", "class"),
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): KindSchema(EC2NodeClassV1, "v1", "class"),
    (CLUSTER_API_VERSION, "Cluster"): KindSchema(Cluster, "v1", "cluster"),
    (OVERLAY_API_VERSION, "NodeOverlay"): KindSchema(NodeOverlay, "v1", "overlay"),
    (BUFFER_API_VERSION, "CapacityBuffer"): KindSchema(CapacityBufferDocument, "v1", "buffer"),
    ("v1", "PodTemplate"): KindSchema(PodTemplateDocument, "v1", "podtemplate"),
}

KNOWN_KINDS = tuple(sorted({kind for _, kind in KINDS}))


def api_versions_of(kind: str) -> tuple[str, ...]:
    return tuple(api_version for api_version, known in KINDS if known == kind)
