"""NodePools, EC2NodeClasses and NodeOverlays from the cluster, merged with the deployed config by
`spec.poolSource`.

Rules:
- Sources (`Cluster.spec.poolSource`): `config` (the default, and what a config without a Cluster document
  gets) uses only the deployed config (the SSM parameter, from `clusters/NAME.yaml`); `cluster` uses only the
  `karpenter.sh` / `karpenter.k8s.aws` objects in the cluster; `both` uses both, and an object in the cluster
  wins over a config document of the same kind and name (GitOps is the live source; the config entry it
  replaces is reported in `MergedConfig.shadowed`). Reading the cluster is opt-in so that a deployment that
  keeps its pools in the config makes no call for objects it does not use.
  The Cluster document itself (name, region, settings, interruption) always comes from the config, and so
  do the config file's CapacityBuffers and PodTemplates (the cluster's CapacityBuffers are read apart, by
  `services.buffer_pods`).
- Every cluster object is validated alone, with the same rules as `longshore validate` (it is loaded through
  `load_cluster_text`), an EC2NodeClass first and then each NodePool against the classes that are valid; a
  NodeOverlay needs nothing else. (Only pools and classes get a status written back: `services.karpenter_sync`.) An
  invalid object is not used; its `ObjectVerdict` carries the loader's message, which names the object
  (`nodepools.karpenter.sh/NAME`), the field and the value. A NodePool whose class is invalid or missing is
  invalid too ("nodeClassRef names ... which does not exist").
- Whatever the cluster holds, the result loads: if the merged set fails as a whole (a config pool whose class
  a cluster object replaced with an incompatible one), the config alone is used and every cluster object is
  reported as not used, with the reason.
- Only `metadata.name`, `labels`, `annotations` and `spec` of an object are read; status and server fields
  are ignored. `read_fingerprint` is exactly that read, so two object lists with equal fingerprints merge
  alike (what `wiring.runtime.Runtime.refreshed` compares).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from longshore.config.errors import ConfigErrors
from longshore.config.loader import load_cluster_text
from longshore.core.karpenter_objects import RESOURCE_OF_KIND, ObjectVerdict
from longshore.core.model import ClusterConfig

POOL_KINDS = ("NodePool", "Provisioner")
CLASS_KINDS = ("EC2NodeClass", "AWSNodeTemplate")
OVERLAY_KINDS = ("NodeOverlay",)


@dataclass(frozen=True, slots=True)
class MergedConfig:
    config: ClusterConfig
    verdicts: tuple[ObjectVerdict, ...]
    shadowed: tuple[str, ...] = ()  # "Kind/name" of config documents replaced by cluster objects


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _key(document: Mapping[str, Any]) -> tuple[str, str]:
    return str(document.get("kind", "")), str((document.get("metadata") or {}).get("name", ""))


def _clean(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "labels", "annotations") if meta.get(k)}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": kept,
        "spec": obj.get("spec") or {},
    }


def _text(documents: Iterable[Mapping[str, Any]]) -> str:
    return yaml.safe_dump_all(list(documents), sort_keys=False, width=1000)


def merge_cluster_objects(
    config_text: str,
    source: str,
    objects: Iterable[Mapping[str, Any]],
    *,
    region: str,
    cluster_name: str,
) -> MergedConfig:
    """The deployed config (`config_text`, named `source` in errors) merged with the cluster's pool and class
    objects as its `poolSource` says; raises `ConfigErrors` only when the deployed config itself is invalid.
    The merge reads only the objects' cleaned fields, so the last few answers are kept by those (as JSON)."""
    cleaned = [_clean(o) for o in objects if o.get("kind") in POOL_KINDS + CLASS_KINDS + OVERLAY_KINDS]
    try:
        key = json.dumps(cleaned)
    except TypeError:  # not JSON (only hand-built objects): merged without keeping the answer
        return _merge(config_text, source, cleaned, region, cluster_name)
    return _merge_kept(config_text, source, key, region, cluster_name)


@functools.lru_cache(maxsize=16)
def _merge_kept(config_text: str, source: str, cleaned: str, region: str, cluster_name: str) -> MergedConfig:
    return _merge(config_text, source, json.loads(cleaned), region, cluster_name)


def _merge(
    config_text: str, source: str, cleaned: list[dict[str, Any]], region: str, cluster_name: str
) -> MergedConfig:
    base = load_cluster_text(config_text, source, region=region, cluster_name=cluster_name)
    if base.pool_source == "config":
        return MergedConfig(base, ())
    documents = _documents(config_text)
    head = [d for d in documents if d.get("kind") == "Cluster"]
    config_docs = [d for d in documents if d.get("kind") != "Cluster"] if base.pool_source == "both" else []

    alone = [_with_pool_references(d, set()) for d in head]

    def load(docs: list[Mapping[str, Any]], name: str, whole: bool = False) -> ClusterConfig:
        # An object is checked first in its own text (so error lines count from its first line), beside a
        # Cluster document without the per-pool settings that would name pools it does not hold.
        if whole:
            names = {_key(d)[1] for d in docs if d.get("kind") in POOL_KINDS}
            ordered = [*(_with_pool_references(d, names) for d in head), *docs]
        else:
            ordered = [*docs[-1:], *alone, *docs[:-1]]
        return load_cluster_text(_text(ordered), name, region=region, cluster_name=cluster_name)

    verdicts: dict[tuple[str, str], ObjectVerdict] = {}

    def chosen(
        kinds: tuple[str, ...], check: Callable[[Mapping[str, Any]], object], *, drop_invalid: bool = False
    ) -> dict[tuple[str, str], Mapping[str, Any]]:
        # The config documents of `kinds`, each cluster object of `kinds` judged by `check` replacing its
        # namesake when valid; an invalid one also removes its namesake when `drop_invalid` (a class).
        kept: dict[tuple[str, str], Mapping[str, Any]] = {
            _key(d): d for d in config_docs if d.get("kind") in kinds
        }
        for obj in (o for o in cleaned if o.get("kind") in kinds):
            verdict = verdicts[_key(obj)] = _judge(check, obj)
            if verdict.valid:
                kept[_key(obj)] = obj
            elif drop_invalid:
                kept.pop(_key(obj), None)
        return kept

    classes = chosen(CLASS_KINDS, lambda obj: load([obj], _ref(obj)), drop_invalid=True)
    pools = chosen(POOL_KINDS, lambda obj: load([*classes.values(), obj], _ref(obj)))
    overlays = chosen(OVERLAY_KINDS, lambda obj: load([obj], _ref(obj)))
    shadowed = tuple(
        f"{kind}/{name}" for kind, name in (_key(d) for d in config_docs) if (kind, name) in verdicts
    )
    try:
        merged = load(
            [*classes.values(), *pools.values(), *overlays.values()],
            f"{source} + cluster objects",
            whole=True,
        )
    except ConfigErrors as errors:
        reason = f"not used: the merged configuration is invalid: {errors}"
        fallback = tuple(
            ObjectVerdict(v.kind, v.name, v.valid, v.message or reason, used=False) for v in verdicts.values()
        )
        return MergedConfig(base, fallback)
    # CapacityBuffers and PodTemplates of the config file apply whatever poolSource says (`config.buffers`).
    merged = dataclasses.replace(merged, buffers=base.buffers, buffer_templates=base.buffer_templates)
    return MergedConfig(_with_origins(merged, verdicts, source), tuple(verdicts.values()), shadowed)


def _with_origins(
    config: ClusterConfig, verdicts: Mapping[tuple[str, str], ObjectVerdict], source: str
) -> ClusterConfig:
    """Each pool and class names where it came from: its cluster object, or the deployed config."""

    def origin_of(kinds: tuple[str, ...], name: str) -> str:
        found = next((v for k in kinds if (v := verdicts.get((k, name))) is not None and v.valid), None)
        return found.ref if found is not None else source

    pools = tuple(
        dataclasses.replace(p, origin=dataclasses.replace(p.origin, file=origin_of(POOL_KINDS, p.name)))
        for p in config.node_pools
    )
    classes = tuple(
        dataclasses.replace(c, origin=dataclasses.replace(c.origin, file=origin_of(CLASS_KINDS, c.name)))
        for c in config.node_classes
    )
    return dataclasses.replace(config, node_pools=pools, node_classes=classes)


def _with_pool_references(cluster: Mapping[str, Any], pools: set[str]) -> dict[str, Any]:
    """The Cluster document with its per-pool settings kept only for `pools` (the others are not loaded)."""
    spec = dict(cluster.get("spec") or {})
    interruption = dict(spec.get("interruption") or {})
    by_pool = interruption.pop("rebalanceByPool", None) or {}
    kept = {name: policy for name, policy in by_pool.items() if name in pools}
    if kept:
        interruption["rebalanceByPool"] = kept
    spec["interruption"] = interruption
    return {**cluster, "spec": spec}


def _ref(obj: Mapping[str, Any]) -> str:
    kind, name = _key(obj)
    return f"{RESOURCE_OF_KIND.get(kind, kind)}/{name}"


def _judge(check: Callable[[Mapping[str, Any]], object], obj: Mapping[str, Any]) -> ObjectVerdict:
    kind, name = _key(obj)
    try:
        check(obj)
    except ConfigErrors as errors:
        return ObjectVerdict(kind, name, valid=False, message=str(errors), used=False)
    return ObjectVerdict(kind, name, valid=True)


def read_fingerprint(objects: tuple[dict[str, Any], ...]) -> tuple[tuple[str, str, str], ...]:
    """What the merge reads of each object (the rule above: name, labels, annotations, spec), never
    its status or resourceVersion: the provisioner writes the pools' status after every invocation, and a
    status write must not rebuild every function at its next pass."""
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        read = repr((meta.get("labels"), meta.get("annotations"), obj.get("spec")))
        out.append((str(obj.get("kind")), str(meta.get("name")), read))
    return tuple(sorted(out))
