"""Where the stack's cluster config comes from: `clusters/NAME.yaml`, read by the loader `longshore validate` uses.

Theory of operation: the stack never parses YAML itself. It calls `longshore.config.load_cluster` (the
validated model the stack reads: cluster name, region, node roles, interruption settings) and
`longshore.config.bundle_cluster` (the validated config text the functions read back from SSM at run
time). Both raise `longshore.config.ConfigErrors` on a bad config, whose message is exactly what
`longshore validate` prints; app.py prints it and fails the synth.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from longshore.core.model import ClusterConfig

CLUSTERS_DIR = Path(__file__).resolve().parents[1] / "clusters"
DEFAULT_REGION = "us-east-1"


class ClusterNotFound(LookupError):
    """`-c cluster=NAME` names no clusters/NAME.yaml; the message lists the ones that exist."""


@dataclass(frozen=True, slots=True)
class ClusterSource:
    """A validated cluster config and the text the functions load at run time."""

    config: ClusterConfig
    bundle: str
    path: Path | None = None


def cluster_path(name: str, clusters_dir: Path = CLUSTERS_DIR) -> Path:
    path = clusters_dir / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in clusters_dir.glob("*.yaml")) if clusters_dir.is_dir() else []
        listing = ", ".join(known) if known else "none"
        raise ClusterNotFound(
            f"context 'cluster': {name!r} has no config file {path} (clusters available: {listing})"
        )
    return path


def load_cluster_source(
    name: str, clusters_dir: Path = CLUSTERS_DIR, region: str | None = None
) -> ClusterSource:
    """Load and validate clusters/NAME.yaml; raises `ConfigErrors` (from longshore.config) when invalid."""
    from longshore.config import bundle_cluster, load_cluster

    path = cluster_path(name, clusters_dir)
    config = load_cluster([path], region=region or DEFAULT_REGION, cluster_name=name)
    bundle = bundle_cluster([path], region=region or DEFAULT_REGION, cluster_name=name)
    return ClusterSource(config=config, bundle=bundle, path=path)
