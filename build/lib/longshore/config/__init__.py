"""Configuration at the edge: YAML cluster configs and Karpenter manifests, validated and normalised.

Public API (used by the CLI, the Lambda handlers, the CDK app and the simulation):

* `load_cluster(paths, *, region, cluster_name, kubernetes_version) -> ClusterConfig`
* `load_cluster_text(text, source, ...) -> ClusterConfig` (the copy kept in an SSM parameter)
* `bundle_cluster(paths, ...) -> str` (one self-contained multi-document YAML for that parameter)
* `ConfigErrors` (raised with every `ConfigError` found; nothing is ever partly loaded)

See `config.loader` for the stages and `config.normalise` for how each Karpenter dialect maps to the model.
"""

from __future__ import annotations

from longshore.config.errors import ConfigError, ConfigErrors
from longshore.config.loader import (
    DEFAULT_CLUSTER_NAME,
    DEFAULT_KUBERNETES_VERSION,
    DEFAULT_REGION,
    bundle_cluster,
    load_cluster,
    load_cluster_text,
)
from longshore.core.model import ClusterConfig

__all__ = [
    "DEFAULT_CLUSTER_NAME",
    "DEFAULT_KUBERNETES_VERSION",
    "DEFAULT_REGION",
    "ClusterConfig",
    "ConfigError",
    "ConfigErrors",
    "bundle_cluster",
    "load_cluster",
    "load_cluster_text",
]
