"""Load a cluster's configuration: files (a cluster config or plain Karpenter manifests) -> `ClusterConfig`.

Theory of operation: loading runs in stages, and each stage reports every problem it finds into one
`ErrorSink` before the next stage starts:

1. *Collect*: read each path (a directory means its `*.yaml`/`*.yml` files), parse the YAML into documents
   with line maps, find the optional `longshore.io/v1alpha1 Cluster` document (at most one) and gather the
   pool documents it carries inline (`spec.manifests`) or names (`spec.include`, paths or globs relative to
   the cluster file and confined to its directory, see `config.includes`), next to those given directly.
2. *Validate*: look each document's `(apiVersion, kind)` up in `schema.KINDS` and validate it with its
   pydantic schema (strict, with Karpenter's rules); pydantic's errors become located `ConfigError`s.
3. *Relate*: across all documents, pool names and class names must be unique, every `providerRef` /
   `nodeClassRef` must name a class that exists (of a kind that dialect can refer to), and per-pool
   interruption overrides must name existing pools (`config.relations`).
4. *Normalise*: only when nothing above failed, build the `ClusterConfig` (see `config.normalise`; the
   CapacityBuffer and PodTemplate documents: `config.buffers`).

Any error raises `ConfigErrors` with all of them; nothing is ever partly loaded. Without a Cluster document
the cluster name, region and Kubernetes version come from the caller (the CLI's `--cluster-name`/`--region`).
`bundle_cluster` renders everything a configuration references as one self-contained multi-document YAML, the
form kept in the SSM parameter the Lambda functions read with `load_cluster_text`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from longshore.config import buffers as config_buffers
from longshore.config import normalise, overlays
from longshore.config.errors import ConfigError, ErrorSink, suggestion
from longshore.config.includes import resolve_includes
from longshore.config.relations import relate
from longshore.config.schema import KINDS, KNOWN_KINDS, KindSchema, api_versions_of
from longshore.config.schema.cluster import CLUSTER_API_VERSION, Cluster
from longshore.config.schema.nodeclass import EC2NodeClassV1, EC2NodeClassV1beta1
from longshore.config.schema.v1 import NodePoolV1, NodePoolV1beta1
from longshore.config.schema.v1alpha5 import AWSNodeTemplate, Provisioner
from longshore.config.validation_errors import document_errors
from longshore.config.yaml_documents import Document, PathKey, parse_documents
from longshore.core.model import ClusterConfig, NodeClass, NodePool, Origin

DEFAULT_REGION = "us-east-1"
DEFAULT_CLUSTER_NAME = "demo"
DEFAULT_KUBERNETES_VERSION = "1.31"
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(slots=True)
class _Collected:
    """Stage 1 output: the cluster document (if any) and every other document, in reading order."""

    cluster: Document | None = None
    documents: list[Document] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Validated:
    document: Document
    schema: KindSchema
    model: BaseModel


# --- public API ---------------------------------------------------------------------------------------------


def load_cluster(
    paths: Sequence[Path | str],
    *,
    region: str = DEFAULT_REGION,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> ClusterConfig:
    """Load and validate a cluster from files; raise `ConfigErrors` listing every problem."""
    sink = ErrorSink()
    collected = _collect_paths(paths, sink, allow_include=True)
    return _load(
        collected, sink, region=region, cluster_name=cluster_name, kubernetes_version=kubernetes_version
    )


@functools.lru_cache(maxsize=64)  # a warm Lambda container reads the same parameter at every invocation
def load_cluster_text(
    text: str,
    source: str,
    *,
    region: str = DEFAULT_REGION,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> ClusterConfig:
    """Load a cluster from YAML text (e.g. the SSM parameter); `source` names it in errors. The same arguments
    give the same (deeply frozen) `ClusterConfig`, kept for the next call; a text that fails is never kept."""
    sink = ErrorSink()
    collected = _Collected(files=[source])
    _add_text(text, source, collected, sink, allow_include=False)
    return _load(
        collected, sink, region=region, cluster_name=cluster_name, kubernetes_version=kubernetes_version
    )


def bundle_cluster(
    paths: Sequence[Path | str],
    *,
    region: str = DEFAULT_REGION,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> str:
    """One self-contained multi-document YAML: the Cluster document, then every pool and class document.

    The configuration is validated first (raising `ConfigErrors`); `include` and `manifests` are resolved
    into plain documents, and a Cluster document is written from the arguments when the files have none,
    so `load_cluster_text(bundle_cluster(paths), ...)` gives the same cluster as `load_cluster(paths, ...)`.
    """
    load_cluster(paths, region=region, cluster_name=cluster_name, kubernetes_version=kubernetes_version)
    sink = ErrorSink()
    collected = _collect_paths(paths, sink, allow_include=True)
    sink.raise_if_any(collected.files)
    if collected.cluster is not None:
        cluster_data = dict(collected.cluster.data)
        spec = dict(cluster_data.get("spec") or {})
        spec.pop("include", None)
        spec.pop("manifests", None)
        cluster_data["spec"] = spec
    else:
        cluster_data = {
            "apiVersion": CLUSTER_API_VERSION,
            "kind": "Cluster",
            "metadata": {"name": cluster_name},
            "spec": {"region": region, "kubernetesVersion": kubernetes_version},
        }
    header = "# Generated by Longshore from: " + ", ".join(collected.files) + "\n"
    body = yaml.safe_dump_all(
        [cluster_data, *(document.data for document in collected.documents)], sort_keys=False, width=1000
    )
    return header + body


# --- stage 1: collect ---------------------------------------------------------------------------------------


def _collect_paths(paths: Sequence[Path | str], sink: ErrorSink, *, allow_include: bool) -> _Collected:
    collected = _Collected()
    if not paths:
        sink.add(ConfigError(file="<arguments>", message="no configuration files given"))
    for given in paths:
        for file in _expand(Path(given), sink):
            _add_file(file, collected, sink, allow_include=allow_include)
    return collected


def _expand(path: Path, sink: ErrorSink) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file())
        if not files:
            sink.add(ConfigError(file=str(path), message="the directory holds no .yaml or .yml files"))
        return files
    if not path.exists():
        sink.add(ConfigError(file=str(path), message="file not found"))
        return []
    return [path]


def _add_file(
    path: Path, collected: _Collected, sink: ErrorSink, *, allow_include: bool, included: bool = False
) -> None:
    source = str(path)
    if source in collected.files:
        return
    collected.files.append(source)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        sink.add(ConfigError(file=source, message="the file is not UTF-8 text"))
        return
    except OSError as exc:
        sink.add(ConfigError(file=source, message=f"cannot read the file: {exc.strerror or exc}"))
        return
    _add_text(text, source, collected, sink, allow_include=allow_include, included=included)


def _add_text(
    text: str,
    source: str,
    collected: _Collected,
    sink: ErrorSink,
    *,
    allow_include: bool,
    included: bool = False,
) -> None:
    documents, errors = parse_documents(text, source)
    sink.extend(errors)
    for document in documents:
        if document.kind != "Cluster":
            collected.documents.append(document)
            continue
        if included:
            sink.add(
                document.error(("kind",), "an included file cannot hold a Cluster document", document.kind)
            )
        elif collected.cluster is not None:
            first = collected.cluster
            sink.add(
                document.error(
                    ("kind",),
                    f"only one Cluster document is allowed; the first is {first.label} at {first.source}:{first.line}",
                    document.kind,
                )
            )
        else:
            collected.cluster = document
            _add_cluster_contents(document, collected, sink, allow_include=allow_include)


def _add_cluster_contents(
    cluster: Document, collected: _Collected, sink: ErrorSink, *, allow_include: bool
) -> None:
    """Gather the documents a Cluster holds inline (`spec.manifests`) and names (`spec.include`)."""
    spec = cluster.data.get("spec")
    if not isinstance(spec, dict):
        return  # reported by the schema
    manifests = spec.get("manifests")
    if isinstance(manifests, list):
        for index, item in enumerate(manifests):
            prefix: PathKey = ("spec", "manifests", index)
            if not isinstance(item, dict):
                continue  # reported by the schema
            if item.get("kind") == "Cluster":
                sink.add(cluster.error(prefix, "spec.manifests cannot hold a Cluster document", "Cluster"))
                continue
            collected.documents.append(_sub_document(cluster, prefix, item))
    includes = spec.get("include")
    if not isinstance(includes, list) or not includes:
        return
    if not allow_include:
        sink.add(
            cluster.error(
                ("spec", "include"),
                "include is not allowed in a configuration given as text; bundle the files first",
                includes,
            )
        )
        return
    files, errors = resolve_includes(cluster, includes)
    sink.extend(errors)
    for file in files:
        _add_file(file, collected, sink, allow_include=False, included=True)


def _sub_document(parent: Document, prefix: PathKey, data: dict[str, Any]) -> Document:
    size = len(prefix)
    lines = {path[size:]: line for path, line in parent.lines.items() if path[:size] == prefix}
    return Document(parent.source, parent.index, data, parent.line_of(prefix), lines)


# --- stages 2-4 ---------------------------------------------------------------------------------------------


def _load(
    collected: _Collected, sink: ErrorSink, *, region: str, cluster_name: str, kubernetes_version: str
) -> ClusterConfig:
    cluster_model = _validate_cluster(collected.cluster, sink)
    validated = [v for v in (_validate(document, sink) for document in collected.documents) if v is not None]
    pools, classes = _normalise(validated, sink)
    node_overlays = overlays.overlays_of(
        [(v.document, v.model, _origin(v.document)) for v in validated], sink
    )
    buffers, templates = config_buffers.buffers_of([(v.document, v.model) for v in validated], sink)
    caps = overlays.cost_caps([(v.document, v.model) for v in validated if v.schema.role == "pool"], sink)
    pools = overlays.attach(pools, node_overlays, caps)
    relate(
        collected.documents,
        collected.cluster,
        [(v.document, v.model) for v in validated],
        pools,
        cluster_model,
        sink,
    )
    sink.raise_if_any(collected.files)

    if cluster_model is not None:
        spec = cluster_model.spec
        default_profile = spec.settings.defaultInstanceProfile
        if default_profile:  # v1alpha5: aws.defaultInstanceProfile applies to templates that name none
            classes = [
                dataclasses.replace(c, instance_profile=default_profile)
                if c.origin.is_v1alpha5 and c.instance_profile is None and c.launch_template_name is None
                else c
                for c in classes
            ]
        by_pool = spec.interruption.rebalanceByPool
        pools = [
            dataclasses.replace(
                pool,
                rebalance=by_pool.get(pool.name, spec.interruption.rebalance),  # type: ignore[arg-type]
            )
            for pool in pools
        ]
        return ClusterConfig(
            name=cluster_model.metadata.name,
            region=spec.region,
            kubernetes_version=spec.kubernetesVersion,
            node_pools=tuple(pools),
            node_classes=tuple(classes),
            interruption=normalise.interruption(spec.interruption),
            settings=normalise.settings(spec.settings),
            pool_source=spec.poolSource,
            node_overlays=node_overlays,
            buffers=buffers,
            buffer_templates=templates,
        )
    return ClusterConfig(
        name=cluster_name,
        region=region,
        kubernetes_version=kubernetes_version,
        node_pools=tuple(pools),
        node_classes=tuple(classes),
        node_overlays=node_overlays,
        buffers=buffers,
        buffer_templates=templates,
    )


def _validate_cluster(document: Document | None, sink: ErrorSink) -> Cluster | None:
    if document is None:
        return None
    if document.api_version != CLUSTER_API_VERSION:
        sink.add(
            document.error(
                ("apiVersion",),
                f"apiVersion {document.api_version or '(missing)'!r} is not supported for kind Cluster; "
                f"use {CLUSTER_API_VERSION}",
                document.api_version,
            )
        )
        return None
    try:
        return Cluster.model_validate(document.data, context={"dialect": "v1"})
    except ValidationError as exc:
        sink.extend(document_errors(document, exc, Cluster))
        return None


def _schema_for(document: Document, sink: ErrorSink) -> KindSchema | None:
    kind, api_version = document.data.get("kind"), document.data.get("apiVersion")
    if kind is None or api_version is None:
        missing = " and ".join(n for n, v in (("apiVersion", api_version), ("kind", kind)) if v is None)
        sink.add(
            document.error((), f"the document has no {missing}; every document needs apiVersion and kind")
        )
        return None
    schema = KINDS.get((str(api_version), str(kind)))
    if schema is not None:
        return schema
    versions = api_versions_of(str(kind))
    if versions:
        sink.add(
            document.error(
                ("apiVersion",),
                f"apiVersion {api_version!r} is not supported for kind {kind}; use {' or '.join(versions)}",
                api_version,
            )
        )
    else:
        sink.add(
            document.error(
                ("kind",),
                f"unknown kind {kind!r}{suggestion(str(kind), KNOWN_KINDS)}; Longshore reads "
                f"{', '.join(KNOWN_KINDS)}",
                kind,
            )
        )
    return None


def _validate(document: Document, sink: ErrorSink) -> _Validated | None:
    schema = _schema_for(document, sink)
    if schema is None:
        return None
    try:
        model = schema.model.model_validate(document.data, context={"dialect": schema.dialect})
    except ValidationError as exc:
        sink.extend(document_errors(document, exc, schema.model))
        return None
    return _Validated(document, schema, model)


def _origin(document: Document) -> Origin:
    return Origin(
        api_version=document.api_version, kind=document.kind, file=document.source, line=document.line
    )


def _normalise(validated: list[_Validated], sink: ErrorSink) -> tuple[list[NodePool], list[NodeClass]]:
    pools: list[NodePool] = []
    classes: list[NodeClass] = []
    for item in validated:
        origin, model = _origin(item.document), item.model
        if isinstance(model, Provisioner):
            pool, inline = normalise.pool_from_provisioner(model, origin)
            pools.append(pool)
            if inline is not None:
                classes.append(inline)
        elif isinstance(model, NodePoolV1):
            pools.append(normalise.pool_from_v1(model, origin))
        elif isinstance(model, NodePoolV1beta1):
            pools.append(normalise.pool_from_v1beta1(model, origin))
        elif isinstance(model, AWSNodeTemplate):
            classes.append(normalise.node_class_from_template(model, origin))
        elif isinstance(model, EC2NodeClassV1 | EC2NodeClassV1beta1):
            classes.append(normalise.node_class_from_ec2nodeclass(model, origin, item.schema.dialect))
    return pools, classes
