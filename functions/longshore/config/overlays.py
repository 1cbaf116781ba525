"""NodeOverlays and dollar limits from the documents: normalised and attached to the pools.

Every pool carries the cluster's overlays (`NodePool.overlays`: which ones match is decided per instance
type and offering by `core.overlays`). A pool's dollar limit is the NodePool (or Provisioner) annotation
`longshore.io/max-cost-per-hour`, an unsigned decimal in USD per hour on the object's own metadata, so the
document stays valid Karpenter YAML; a value that is not such a number is an error that names the
annotation and the value.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from pydantic import BaseModel

from longshore.config.errors import ErrorSink
from longshore.config.schema.overlay import NodeOverlay as NodeOverlaySchema
from longshore.config.yaml_documents import Document
from longshore.core.model import NodeOverlay, NodePool, Origin, Requirement
from longshore.core.resources import Resources

COST_ANNOTATION = "longshore.io/max-cost-per-hour"
_DOLLARS = re.compile(r"^\d+(\.\d+)?$")


def overlay(model: NodeOverlaySchema, origin: Origin) -> NodeOverlay:
    spec = model.spec
    return NodeOverlay(
        name=model.metadata.name,
        origin=origin,
        requirements=tuple(
            Requirement(r.key, r.operator, tuple(r.values))  # type: ignore[arg-type]  # checked by the schema
            for r in spec.requirements
        ),
        price=float(spec.price) if spec.price is not None else None,
        price_adjustment=spec.priceAdjustment,
        capacity=Resources.parse(spec.capacity),
        weight=spec.weight or 0,
    )


def overlays_of(
    documents: Iterable[tuple[Document, BaseModel, Origin]], sink: ErrorSink
) -> tuple[NodeOverlay, ...]:
    """The NodeOverlay documents, normalised; a name used twice is an error at the second."""
    found: dict[str, Document] = {}
    result = []
    for document, model, origin in documents:
        if not isinstance(model, NodeOverlaySchema):
            continue
        first = found.setdefault(model.metadata.name, document)
        if first is not document:
            sink.add(
                document.error(
                    ("metadata", "name"),
                    f"duplicate NodeOverlay name {model.metadata.name!r}: {first.label} at {first.source}:"
                    f"{first.line} has the same name",
                    model.metadata.name,
                )
            )
        result.append(overlay(model, origin))
    return tuple(result)


def cost_cap(document: Document, model: BaseModel, sink: ErrorSink) -> float | None:
    """The pool document's `longshore.io/max-cost-per-hour`, None when absent (errors go to `sink`)."""
    metadata = getattr(model, "metadata", None)
    text = (getattr(metadata, "annotations", None) or {}).get(COST_ANNOTATION)
    if text is None:
        return None
    if not _DOLLARS.match(text):
        sink.add(
            document.error(
                ("metadata", "annotations", COST_ANNOTATION),
                f'{COST_ANNOTATION} must be an unsigned decimal in USD per hour (such as "12.50"), got {text!r}',
                text,
            )
        )
        return None
    return float(text)


def cost_caps(pools: Iterable[tuple[Document, BaseModel]], sink: ErrorSink) -> dict[str, float]:
    """Pool name -> its dollar limit, for the pool documents that carry one."""
    return {
        document.name: cap
        for document, model in pools
        if (cap := cost_cap(document, model, sink)) is not None
    }


def attach(
    pools: Iterable[NodePool], overlays: tuple[NodeOverlay, ...], caps: dict[str, float]
) -> list[NodePool]:
    """The pools with the cluster's overlays and their dollar limits."""
    return [
        dataclasses.replace(pool, overlays=overlays, max_cost_per_hour=caps.get(pool.name))
        if overlays or pool.name in caps
        else pool
        for pool in pools
    ]
