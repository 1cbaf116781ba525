"""Label and field selectors: parse the query-string forms and the `LabelSelector` object form, then match.

Theory of operation: a selector is parsed once into a tuple of requirements and then matched against many
objects. Label selectors follow `k8s.io/apimachinery/pkg/labels`: comma-separated requirements `k`, `!k`,
`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>n`, `k<n`, all of which must hold; `!=` and `notin`
also match objects that lack the key. The object form (`matchLabels` + `matchExpressions`, used by
Deployments, ReplicaSets, DaemonSets and PDBs) converts into the same requirements; an empty object selects
everything and a missing one (None) selects nothing, as `metav1.LabelSelectorAsSelector` does.

Field selectors support `=`, `==` and `!=` on the fields each resource type declares (`resources.py`);
naming another field is a 400, as the API server answers `field label not supported`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from longshore_sim.kubeapi.errors import ApiError, bad_request

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY_RE = re.compile(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$")
_VALUE_RE = re.compile(rf"^({_NAME})?$")
_SET_RE = re.compile(r"^(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_CMP_RE = re.compile(r"^(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s=!<>(),]*)$")


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            actual, bound = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return actual > bound if self.operator == "Gt" else actual < bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """All requirements must hold. `nothing=True` is the nil selector, which matches no object."""

    requirements: tuple[LabelRequirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.nothing

    def to_string(self) -> str:
        """The query-string form (what a Scale's `status.selector` holds)."""
        parts = []
        for r in self.requirements:
            if r.operator == "Exists":
                parts.append(r.key)
            elif r.operator == "DoesNotExist":
                parts.append(f"!{r.key}")
            elif r.operator == "In" and len(r.values) == 1:
                parts.append(f"{r.key}={r.values[0]}")
            elif r.operator in ("In", "NotIn"):
                parts.append(f"{r.key} {r.operator.lower()} ({','.join(r.values)})")
            else:
                parts.append(f"{r.key}{'>' if r.operator == 'Gt' else '<'}{r.values[0]}")
        return ",".join(parts)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _check_key(key: str, selector: str) -> str:
    if not _KEY_RE.match(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in selector {selector!r}")
    return key


def _check_value(value: str, selector: str) -> str:
    if not _VALUE_RE.match(value):
        raise bad_request(
            f"unable to parse requirement: invalid label value {value!r} in selector {selector!r}"
        )
    return value


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the `labelSelector` query parameter; raise a 400 `ApiError` naming the bad part."""
    if text is None or not text.strip():
        return EVERYTHING
    requirements: list[LabelRequirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise bad_request(f"unable to parse requirement: empty requirement in selector {text!r}")
        if part.startswith("!"):
            requirements.append(LabelRequirement(_check_key(part[1:].strip(), text), "DoesNotExist"))
            continue
        match = _SET_RE.match(part)
        if match:
            values = (
                tuple(_check_value(v.strip(), text) for v in match["values"].split(","))
                if match["values"].strip()
                else ()
            )
            if not values:
                raise bad_request(
                    f"unable to parse requirement: for 'in', 'notin' operators, values set can't be empty ({part!r})"
                )
            operator = "In" if match["op"] == "in" else "NotIn"
            requirements.append(
                LabelRequirement(_check_key(match["key"], text), operator, tuple(sorted(set(values))))
            )
            continue
        match = _CMP_RE.match(part)
        if match:
            key, op, value = _check_key(match["key"], text), match["op"], match["value"]
            if op in (">", "<"):
                if not value.lstrip("-").isdigit():
                    raise bad_request(
                        f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer ({part!r})"
                    )
                requirements.append(LabelRequirement(key, "Gt" if op == ">" else "Lt", (value,)))
            else:
                requirements.append(
                    LabelRequirement(
                        key, "In" if op in ("=", "==") else "NotIn", (_check_value(value, text),)
                    )
                )
            continue
        requirements.append(LabelRequirement(_check_key(part, text), "Exists"))
    return LabelSelector(tuple(requirements))


def selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a `metav1.LabelSelector` dict; None selects nothing, `{}` selects everything."""
    if selector is None:
        return NOTHING
    requirements = [
        LabelRequirement(k, "In", (str(v),)) for k, v in sorted((selector.get("matchLabels") or {}).items())
    ]
    for expression in selector.get("matchExpressions") or []:
        operator = expression.get("operator")
        key = str(expression.get("key", ""))
        values = tuple(sorted(str(v) for v in expression.get("values") or []))
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise bad_request(f"{operator!r} is not a valid label selector operator")
        if operator in ("In", "NotIn") and not values:
            raise bad_request(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
        requirements.append(LabelRequirement(key, operator, values))
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    equals: bool
    value: str


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, r.field) == r.value) == r.equals for r in self.requirements)


ALL_FIELDS = FieldSelector()


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _split_unescaped(text: str, separator: str) -> list[str]:
    return re.split(rf"(?<!\\){re.escape(separator)}", text)


def parse_field_selector(text: str | None, supported: frozenset[str]) -> FieldSelector:
    """Parse the `fieldSelector` query parameter against the fields the resource type supports."""
    if text is None or not text.strip():
        return FieldSelector()
    requirements = []
    for raw in _split_unescaped(text, ","):
        part = raw.strip()
        match = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", part)
        if not match:
            raise bad_request(f"invalid selector: {text!r}; can't understand {part!r}")
        field, op, value = match.group(1).strip(), match.group(2), _unescape(match.group(3))
        if field not in supported:
            raise ApiError(400, "BadRequest", f"field label not supported: {field}")
        requirements.append(FieldRequirement(field, op != "!=", value))
    return FieldSelector(tuple(requirements))


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The string value a field selector compares against ("" when absent, booleans as "true"/"false")."""
    if field == "source":
        field = "source.component"
    current: Any = obj
    for part in field.split("."):
        if not isinstance(current, Mapping):
            current = None
            break
        current = current.get(part)
    if isinstance(current, bool):
        return "true" if current else "false"
    if current is None:
        return "false" if field in ("spec.unschedulable", "spec.hostNetwork") else ""
    return str(current)
