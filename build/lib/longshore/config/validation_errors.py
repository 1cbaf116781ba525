"""Turn pydantic's validation errors into Longshore's friendly, located `ConfigError`s.

Theory of operation: schema attribute names are the YAML field names, so a pydantic error location is the
user's field path; the document's line map turns it into a line. Each pydantic error type gets a message in
the user's terms: an unknown field is named with a difflib suggestion drawn from the fields the schema allows
at that place (found by walking the schema's type annotations along the path), or with a hint when the field
exists in another Karpenter version; a wrong type says what was expected and what was found (and to quote
numbers meant as strings); our own rule errors (`FieldRuleError`) extend the path to the field they are about.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from longshore.config.errors import ConfigError, suggestion
from longshore.config.schema.base import FieldRuleError, FieldRuleErrors
from longshore.config.yaml_documents import Document, PathKey

#: Fields that moved between Karpenter versions: (apiVersion prefix, field) -> hint.
MOVED_FIELDS: dict[tuple[str, str], str] = {
    (
        "karpenter.sh/v1",
        "kubelet",
    ): "in karpenter.sh/v1 the kubelet settings moved to EC2NodeClass spec.kubelet",
    (
        "karpenter.sh/v1",
        "expireAfter",
    ): "in karpenter.sh/v1 expireAfter moved to spec.template.spec.expireAfter",
    ("karpenter.sh/v1", "providerRef"): "NodePools name their class in spec.template.spec.nodeClassRef",
    ("karpenter.sh/v1", "ttlSecondsAfterEmpty"): (
        "use spec.disruption.consolidationPolicy: WhenEmpty with consolidateAfter instead"
    ),
    ("karpenter.sh/v1", "ttlSecondsUntilExpired"): "use spec.template.spec.expireAfter instead",
    ("karpenter.sh/v1", "requirements"): "requirements belong in spec.template.spec.requirements",
    ("karpenter.sh/v1", "labels"): "labels belong in spec.template.metadata.labels",
    ("karpenter.sh/v1", "taints"): "taints belong in spec.template.spec.taints",
    (
        "karpenter.sh/v1alpha5",
        "template",
    ): "spec.template is karpenter.sh/v1 syntax; this document is v1alpha5",
    ("karpenter.sh/v1alpha5", "disruption"): (
        "spec.disruption is karpenter.sh/v1 syntax; v1alpha5 uses ttlSecondsAfterEmpty, ttlSecondsUntilExpired "
        "and consolidation.enabled"
    ),
    ("karpenter.sh/v1alpha5", "minValues"): "minValues needs karpenter.sh/v1beta1 or v1",
    ("karpenter.k8s.aws/v1alpha1", "role"): "AWSNodeTemplate takes instanceProfile; role needs EC2NodeClass",
    ("karpenter.k8s.aws/v1alpha1", "subnetSelectorTerms"): "AWSNodeTemplate uses subnetSelector (a map)",
    ("karpenter.k8s.aws/v1alpha1", "securityGroupSelectorTerms"): (
        "AWSNodeTemplate uses securityGroupSelector (a map)"
    ),
    ("karpenter.k8s.aws/v1alpha1", "amiSelectorTerms"): "AWSNodeTemplate uses amiSelector (a map)",
    ("karpenter.k8s.aws/v1", "subnetSelector"): "EC2NodeClass uses subnetSelectorTerms (a list of terms)",
    ("karpenter.k8s.aws/v1", "securityGroupSelector"): "EC2NodeClass uses securityGroupSelectorTerms",
    ("karpenter.k8s.aws/v1", "amiSelector"): "EC2NodeClass uses amiSelectorTerms",
}

_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def document_errors(document: Document, exc: ValidationError, root: type[BaseModel]) -> list[ConfigError]:
    """Every error of `exc` (raised validating `document` against `root`), located and explained."""
    errors: list[ConfigError] = []
    for detail in exc.errors():
        loc: PathKey = tuple(part for part in detail["loc"] if part != "[key]")
        error_type = detail["type"]
        value = detail.get("input")
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, FieldRuleErrors):
            for issue in cause.issues:
                path = (*loc, *issue.at)
                errors.append(document.error(path, issue.message, issue.value))
            continue
        if isinstance(cause, FieldRuleError):
            errors.append(document.error((*loc, *cause.at), cause.message, cause.value))
            continue
        errors.append(document.error(loc, _message(document, root, loc, error_type, value, detail), value))
    return errors


def _message(
    document: Document, root: type[BaseModel], loc: PathKey, error_type: str, value: Any, detail: Any
) -> str:
    field = str(loc[-1]) if loc else ""
    if error_type == "extra_forbidden":
        allowed = _fields_at(root, loc[:-1])
        hint = suggestion(field, allowed)
        if not hint:
            for (prefix, moved), text in MOVED_FIELDS.items():
                if moved == field and document.api_version.startswith(prefix):
                    hint = f" ({text})"
                    break
        if not hint and allowed:
            hint = f" (allowed here: {', '.join(sorted(allowed))})"
        return f"unknown field '{field}'{hint}"
    if error_type == "missing":
        return f"required field '{field}' is missing"
    if error_type in _TYPE_WORDS:
        quote = ""
        if error_type == "string_type" and isinstance(value, int | float | bool):
            quote = f' (YAML reads {_yaml_text(value)} as {_KIND_OF[type(value)]}; quote it: "{_yaml_text(value)}")'
        return f"expected {_TYPE_WORDS[error_type]}, got {_describe(value)}{quote}"
    if error_type == "value_error":
        message = str(detail.get("msg", ""))
        return message.removeprefix("Value error, ")
    return str(detail.get("msg", error_type))


_KIND_OF: dict[type, str] = {bool: "a boolean", int: "an integer", float: "a number"}


def _yaml_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _describe(value: object) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _fields_at(root: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The field names the schema allows at `loc` (empty when it is not an object)."""
    current: Any = root
    for part in loc:
        current = _descend(current, part)
        if current is None:
            return []
    model = _model_of(current)
    return list(model.model_fields) if model is not None else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in _unwrap(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _unwrap(annotation: Any) -> list[Any]:
    """The alternatives of an annotation, with Optional/Union/Annotated removed."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [alt for arg in typing.get_args(annotation) if arg is not type(None) for alt in _unwrap(arg)]
    return [annotation]


def _descend(annotation: Any, part: str | int) -> Any:
    for candidate in _unwrap(annotation):
        model = _model_of(candidate)
        if model is not None and isinstance(part, str) and part in model.model_fields:
            return model.model_fields[part].annotation
        origin = typing.get_origin(candidate)
        args = typing.get_args(candidate)
        if origin is list and isinstance(part, int) and args:
            return args[0]
        if origin is dict and len(args) == 2:
            return args[1]
    return None
