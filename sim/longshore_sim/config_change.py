"""A changed cluster config, as someone edits a NodePool and deploys it (scenario step `config`, chaos `config-change`).

Rules:
- The change is made to the YAML documents of the config the functions read now (the SSM parameter's text,
  `SimulatedWorld.config_text`) and the result is validated with the rules of `longshore validate`
  (`config.load_cluster_text`) before it is published, as a deploy refuses an invalid config.
- Only a `karpenter.sh` NodePool document (v1 or v1beta1) can be changed: its `spec.disruption.budgets`
  replaced, its `spec.limits` replaced, requirements put into `spec.template.spec.requirements` (one with the
  same key is replaced). The older dialect's Provisioner is refused by name.
- `files` replaces the whole config with the bundle of those files (`config.bundle_cluster`); `revert` puts back
  the config the run started with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from longshore.config import bundle_cluster, load_cluster_text
from longshore.core.model import ClusterConfig

if TYPE_CHECKING:
    from longshore_sim.scenario import ConfigChange


def change_pool(
    text: str,
    pool: str,
    *,
    budgets: Sequence[Mapping[str, Any]] | None = None,
    limits: Mapping[str, Any] | None = None,
    requirements: Sequence[Mapping[str, Any]] = (),
) -> str:
    """`text` with the NodePool `pool` changed (see the module rules); raises ValueError naming what is wrong."""
    documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    found = False
    for document in documents:
        name = (document.get("metadata") or {}).get("name")
        if name != pool or document.get("kind") not in ("NodePool", "Provisioner"):
            continue
        if document.get("kind") != "NodePool":
            raise ValueError(f"pool {pool} is a {document.get('kind')}; only a NodePool can be changed")
        found = True
        spec = document.setdefault("spec", {})
        if budgets is not None:
            spec.setdefault("disruption", {})["budgets"] = [dict(b) for b in budgets]
        if limits is not None:
            spec["limits"] = dict(limits)
        if requirements:
            template = spec.setdefault("template", {}).setdefault("spec", {})
            keys = {r.get("key") for r in requirements}
            kept = [r for r in template.get("requirements") or [] if r.get("key") not in keys]
            template["requirements"] = kept + [dict(r) for r in requirements]
    if not found:
        raise ValueError(f"the config has no NodePool named {pool!r}")
    return str(yaml.safe_dump_all(documents, sort_keys=False, width=1000))


def parse(text: str, config: ClusterConfig) -> ClusterConfig:
    """The config `text` gives, read as the functions read the SSM parameter (raises `ConfigErrors`)."""
    return load_cluster_text(
        text,
        "ssm:config",
        region=config.region,
        cluster_name=config.name,
        kubernetes_version=config.kubernetes_version,
    )


def changed_text(
    current: str, original: str, change: ConfigChange, resolve: Callable[[str], Path], config: ClusterConfig
) -> tuple[str, str]:
    """The config text after a scenario's `config` step, and a note saying what changed."""
    if change.revert:
        return original, "back to the first one"
    if change.files:
        paths = [resolve(f) for f in change.files]
        text = bundle_cluster(paths, region=config.region, cluster_name=config.name)
        return text, f"replaced by {', '.join(change.files)}"
    assert change.pool is not None  # the step's validator
    text = change_pool(
        current, change.pool, budgets=change.budgets, limits=change.limits, requirements=change.requirements
    )
    what = [
        name
        for name, given in (
            (f"budgets {change.budgets}", change.budgets is not None),
            (f"limits {change.limits}", change.limits is not None),
            (f"requirements {change.requirements}", bool(change.requirements)),
        )
        if given
    ]
    return text, f"NodePool {change.pool}: {', '.join(what)}"
