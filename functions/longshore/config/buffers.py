"""CapacityBuffers in the cluster config file: CapacityBuffer and PodTemplate documents, normalised.

Rules: each document has passed its schema (`config.schema.buffer`) before it gets here. A buffer is the
`core.buffers.CapacityBuffer` that `parse_buffer` makes of the document, with `origin` `file:line`; a
PodTemplate becomes a `BufferTemplate` (its pod). Names are unique per namespace and kind: a second buffer
or PodTemplate of the same `namespace/name` is an error at the second, naming the first. A config-file
buffer's `podTemplateRef` may name a PodTemplate of the config file or one in the cluster, and a
`scalableRef` always names a workload in the cluster, so neither is checked here (an unknown name shows as
`ReadyForProvisioning: False` in `longshore status` and the provisioner's log).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from longshore.config.errors import ErrorSink
from longshore.config.schema.buffer import CapacityBufferDocument, PodTemplateDocument
from longshore.config.yaml_documents import Document
from longshore.core.buffers import BufferError, BufferTemplate, CapacityBuffer, parse_buffer
from longshore.core.pod_manifest import pod_from_manifest


def buffers_of(
    documents: Iterable[tuple[Document, BaseModel]], sink: ErrorSink
) -> tuple[tuple[CapacityBuffer, ...], tuple[BufferTemplate, ...]]:
    """The config file's buffers and PodTemplates; a duplicate `namespace/name` is an error at the second."""
    buffers: list[CapacityBuffer] = []
    templates: list[BufferTemplate] = []
    seen: dict[tuple[str, str], Document] = {}
    for document, model in documents:
        if not isinstance(model, CapacityBufferDocument | PodTemplateDocument):
            continue
        meta = model.metadata
        key = (document.kind, f"{meta.namespace}/{meta.name}")
        first = seen.get(key)
        if first is not None:
            sink.add(
                document.error(
                    ("metadata", "name"),
                    f"duplicate {document.kind} {key[1]!r}: {first.label} at {first.source}:{first.line} "
                    "has the same namespace and name",
                    meta.name,
                )
            )
            continue
        seen[key] = document
        if isinstance(model, PodTemplateDocument):
            spec = {"metadata": model.template.get("metadata") or {}, "spec": model.template["spec"]}
            templates.append(BufferTemplate(meta.namespace, meta.name, pod_from_manifest(spec)))
            continue
        try:
            buffers.append(parse_buffer(document.data, origin=f"{document.source}:{document.line}"))
        except BufferError as error:  # the schema has the same rules; kept so nothing slips through
            sink.add(document.error(tuple(error.field.split(".")), str(error)))
    return tuple(buffers), tuple(templates)
