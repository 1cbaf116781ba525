"""Stage 3 of loading a cluster's configuration (`config.loader`): the rules that hold across documents.

Rules, each reported as a located `ConfigError` into the loader's `ErrorSink` (this module never raises and
never changes a document, a model or a pool):

- Names are unique per role, across dialects: a Provisioner, a v1beta1 and a v1 NodePool share one pool
  namespace, and an AWSNodeTemplate and an EC2NodeClass share one node-class namespace. The first document
  (in reading order) keeps the name; every later one is the error, pointing at the first.
- A Provisioner's inline `spec.provider` is a node class named after the Provisioner, so it may not clash
  with a node-class document of that name.
- Every `providerRef` (v1alpha5) names an AWSNodeTemplate and every `nodeClassRef` (v1beta1, v1) an
  EC2NodeClass that is defined in the given files; a name defined under the other dialect's kind is its own
  error, saying which kind that dialect refers to.
- Every `spec.interruption.rebalanceByPool` key of the Cluster document names a pool that exists.

Names are gathered from every document of a known pool or class kind, valid or not (a duplicate is still a
duplicate when its twin failed validation), while references are checked only on documents that validated.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from longshore.config.errors import ErrorSink, suggestion
from longshore.config.schema import KINDS
from longshore.config.schema.cluster import Cluster
from longshore.config.schema.v1 import NodePoolV1, NodePoolV1beta1
from longshore.config.schema.v1alpha5 import Provisioner
from longshore.config.yaml_documents import Document, PathKey
from longshore.core.model import NodePool


def relate(
    documents: Sequence[Document],
    cluster_document: Document | None,
    validated: Sequence[tuple[Document, BaseModel]],
    pools: Sequence[NodePool],
    cluster_model: Cluster | None,
    sink: ErrorSink,
) -> None:
    """Cross-document rules: unique names, references that resolve, overrides that name real pools.

    `documents` are every document read but the Cluster one (`cluster_document`), `validated` the ones that
    passed their schema with their models, `pools` the pools built from them."""
    pool_docs: dict[str, Document] = {}
    class_docs: dict[str, Document] = {}
    for document in documents:
        schema = KINDS.get((document.api_version, document.kind))
        if schema is None or schema.role not in ("pool", "class") or not document.name:
            continue
        seen = pool_docs if schema.role == "pool" else class_docs
        what = "pool" if schema.role == "pool" else "node class"
        first = seen.get(document.name)
        if first is not None:
            sink.add(
                document.error(
                    ("metadata", "name"),
                    f"duplicate {what} name {document.name!r}: {first.label} at {first.source}:{first.line} "
                    "has the same name",
                    document.name,
                )
            )
        else:
            seen[document.name] = document
    for document, model in validated:
        if (
            isinstance(model, Provisioner)
            and model.spec.provider is not None
            and model.metadata.name in class_docs
        ):
            other = class_docs[model.metadata.name]
            sink.add(
                document.error(
                    ("spec", "provider"),
                    f"the inline provider is a node class named {model.metadata.name!r}, which clashes with "
                    f"{other.label} at {other.source}:{other.line}",
                )
            )
    for document, model in validated:
        _check_reference(document, model, class_docs, sink)
    if cluster_model is not None and cluster_document is not None:
        names = {pool.name for pool in pools} | set(pool_docs)
        for pool_name, policy in cluster_model.spec.interruption.rebalanceByPool.items():
            if pool_name not in names:
                sink.add(
                    cluster_document.error(
                        ("spec", "interruption", "rebalanceByPool", pool_name),
                        f"no pool is named {pool_name!r}{suggestion(pool_name, names)}",
                        policy,
                    )
                )


def _check_reference(
    document: Document, model: BaseModel, class_docs: dict[str, Document], sink: ErrorSink
) -> None:
    if isinstance(model, Provisioner):
        if model.spec.providerRef is None:
            return
        ref, wanted, field_name = model.spec.providerRef.name, "AWSNodeTemplate", "providerRef"
        path: PathKey = ("spec", "providerRef", "name")
    elif isinstance(model, NodePoolV1 | NodePoolV1beta1):
        ref = model.spec.template.spec.nodeClassRef.name
        wanted, field_name = "EC2NodeClass", "nodeClassRef"
        path = ("spec", "template", "spec", "nodeClassRef", "name")
    else:
        return
    target = class_docs.get(ref)
    if target is None:
        defined = [name for name, doc in class_docs.items() if doc.kind == wanted]
        listing = f"defined: {', '.join(sorted(defined))}" if defined else f"no {wanted} is defined"
        sink.add(
            document.error(
                path,
                f"{field_name} names {wanted} {ref!r}, which is not defined in the given files"
                f"{suggestion(ref, defined)} ({listing})",
                ref,
            )
        )
    elif target.kind != wanted:
        sink.add(
            document.error(
                path,
                f"{field_name} names {ref!r}, which is a {target.kind} ({target.source}:{target.line}); "
                f"a {document.kind} in {document.api_version} refers to a {wanted}",
                ref,
            )
        )
