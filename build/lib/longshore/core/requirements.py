"""The node-requirements algebra: sets of allowed label values per key, intersected and compared.

Theory of operation (Karpenter core `pkg/scheduling/requirement.go`, `requirements.go`): every written
requirement (`core.model.Requirement`: key, operator, values) becomes a `KeyRequirement`, a set of values
for one label key held in one of two shapes:

* *concrete*: exactly the listed values (`In [a,b]`; `DoesNotExist` is the empty concrete set);
* *complement*: every value except the listed ones (`NotIn [a]`; `Exists` excludes nothing), optionally
  bounded by integer limits `gte`/`lte` (`Gt N` becomes `Gte N+1`, `Lt N` becomes `Lte N-1`; a bounded set
  admits only values that parse as integers inside the bounds).

Intersection follows Karpenter: complements stay complements (excluded values united, bounds tightened);
a concrete set minus a complement's exclusions keeps concrete; bounds that cross collapse to
`DoesNotExist`; concrete sets drop out-of-bound values and forget bounds. Every value is built through
one canonicalising constructor, so equal sets have equal representations and intersection is
commutative, associative and idempotent on the representation itself (tests check this with Hypothesis).
`minValues` travels with the key and intersects as the maximum.

A `Requirements` is a frozen, hashable collection of `KeyRequirement`s keyed by the *stable* label name
(beta aliases are normalised on the way in). Two requirement sets are *compatible* when every key they
share has a non-empty intersection, except that two "absence-tolerant" operators (NotIn/DoesNotExist) are
always compatible: Karpenter's `Intersects`, which is symmetric. `admits` is Karpenter's directional
`Compatible` used when a pod meets a node claim: the pod may not require a custom label that the node side
does not define (well-known labels are allowed undefined). Reasons are written for people:
"requires karpenter.k8s.aws/instance-category In [c,m] but the pool allows [r]".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from longshore.core.labels import WELL_KNOWN_LABELS, normalize_key
from longshore.core.model import Requirement

ValueOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
_BOUNDED_OPERATORS = frozenset({"Gt", "Lt", "Gte", "Lte"})
_ABSENCE_TOLERANT = frozenset({"NotIn", "DoesNotExist"})
_MAX_LISTED = 8


class RequirementError(ValueError):
    """A written requirement that cannot mean anything (e.g. `Gt` with a non-integer value)."""


def _as_int(value: str) -> int | None:
    text = value.strip()
    if not text or not (text.isdigit() or (text[0] in "+-" and text[1:].isdigit())):
        return None
    return int(text)


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    number = _as_int(value)
    if number is None:
        return False
    return (gte is None or number >= gte) and (lte is None or number <= lte)


def _listing(values: Iterable[str]) -> str:
    ordered = _sorted_values(values)
    shown = ordered[:_MAX_LISTED]
    more = f",... {len(ordered) - _MAX_LISTED} more" if len(ordered) > _MAX_LISTED else ""
    return "[" + ",".join(shown) + more + "]"


def _sorted_values(values: Iterable[str]) -> list[str]:
    """Numbers numerically, then words alphabetically: `[2,10,a]`."""
    return sorted(values, key=lambda v: (0, _as_int(v) or 0, v) if _as_int(v) is not None else (1, 0, v))


@dataclass(frozen=True, slots=True)
class KeyRequirement:
    """The values allowed for one label key. Build with `KeyRequirement.make` or `from_written`."""

    key: str
    complement: bool
    values: frozenset[str] = frozenset()
    gte: int | None = None
    lte: int | None = None
    min_values: int | None = None

    # --- construction -------------------------------------------------------------------------------
    @staticmethod
    def make(
        key: str,
        complement: bool,
        values: Iterable[str] = (),
        gte: int | None = None,
        lte: int | None = None,
        min_values: int | None = None,
    ) -> KeyRequirement:
        """The canonical form: crossed bounds -> DoesNotExist; values outside bounds dropped;
        a concrete set carries no bounds."""
        if gte is not None and lte is not None and gte > lte:
            return KeyRequirement(key, False, frozenset(), None, None, min_values)
        kept = frozenset(v for v in values if _within(v, gte, lte))
        if not complement:
            gte = lte = None
        return KeyRequirement(key, complement, kept, gte, lte, min_values)

    @staticmethod
    def exists(key: str) -> KeyRequirement:
        return KeyRequirement(normalize_key(key), True)

    @staticmethod
    def does_not_exist(key: str) -> KeyRequirement:
        return KeyRequirement(normalize_key(key), False)

    @staticmethod
    def in_(key: str, values: Iterable[str]) -> KeyRequirement:
        return KeyRequirement.make(normalize_key(key), False, values)

    @staticmethod
    def from_written(requirement: Requirement) -> KeyRequirement:
        """Translate one written requirement; raises `RequirementError` for meaningless ones."""
        key = normalize_key(requirement.key)
        op, values, min_values = requirement.operator, requirement.values, requirement.min_values
        if min_values is not None and min_values < 1:
            raise RequirementError(
                f"requirement {requirement.key!r}: minValues must be at least 1, got {min_values}"
            )
        if op == "In":
            return KeyRequirement.make(key, False, values, min_values=min_values)
        if op == "NotIn":
            return KeyRequirement.make(key, True, values, min_values=min_values)
        if op in ("Exists", "DoesNotExist"):
            if values:
                raise RequirementError(
                    f"requirement {requirement.key!r}: operator {op} takes no values, got {list(values)}"
                )
            return KeyRequirement.make(key, op == "Exists", (), min_values=min_values)
        if op in _BOUNDED_OPERATORS:
            if len(values) != 1:
                raise RequirementError(
                    f"requirement {requirement.key!r}: operator {op} needs exactly one integer value, "
                    f"got {list(values)}"
                )
            number = _as_int(values[0])
            if number is None or number < 0:
                raise RequirementError(
                    f"requirement {requirement.key!r}: operator {op} needs a non-negative integer, "
                    f"got {values[0]!r}"
                )
            gte = {"Gt": number + 1, "Gte": number}.get(op)
            lte = {"Lt": number - 1, "Lte": number}.get(op)
            return KeyRequirement.make(key, True, (), gte=gte, lte=lte, min_values=min_values)
        raise RequirementError(f"requirement {requirement.key!r}: unknown operator {op!r}")

    # --- set algebra ----------------------------------------------------------------------------------
    def intersect(self, other: KeyRequirement) -> KeyRequirement:
        """Values allowed by both (Karpenter `Requirement.Intersection`)."""
        min_values = _max_opt(self.min_values, other.min_values)
        if self.complement and other.complement:
            return KeyRequirement.make(
                self.key,
                True,
                self.values | other.values,
                _max_opt(self.gte, other.gte),
                _min_opt(self.lte, other.lte),
                min_values,
            )
        if self.complement or other.complement:
            open_set, listed = (self, other) if self.complement else (other, self)
            kept = (v for v in listed.values - open_set.values if _within(v, open_set.gte, open_set.lte))
            return KeyRequirement.make(self.key, False, kept, min_values=min_values)
        return KeyRequirement.make(self.key, False, self.values & other.values, min_values=min_values)

    def has(self, value: str) -> bool:
        """Whether a node labelled `key=value` satisfies this requirement."""
        if self.complement:
            return value not in self.values and _within(value, self.gte, self.lte)
        return value in self.values

    def size(self) -> int | None:
        """How many values are allowed; None when unbounded."""
        if not self.complement:
            return len(self.values)
        if self.gte is not None and self.lte is not None:
            return max(0, self.lte - self.gte + 1 - len(self.values))
        return None

    def is_empty(self) -> bool:
        return self.size() == 0

    @property
    def operator(self) -> ValueOperator:
        """The operator this set would be written with (Karpenter `Requirement.Operator`)."""
        if self.complement:
            return "NotIn" if self.values else "Exists"
        return "In" if self.values else "DoesNotExist"

    def matches_absent(self) -> bool:
        """Whether a node *without* this label satisfies the requirement (NotIn and DoesNotExist do)."""
        if self.complement:
            return bool(self.values) and self.gte is None and self.lte is None
        return not self.values

    def describe(self) -> str:
        """`In [c,m]`, `NotIn [t]`, `Exists`, `DoesNotExist`, `Gte 6`, `NotIn [7] Gte 4 Lte 9`."""
        if not self.complement:
            return f"In {_listing(self.values)}" if self.values else "DoesNotExist"
        parts = [f"NotIn {_listing(self.values)}"] if self.values else []
        if self.gte is not None:
            parts.append(f"Gte {self.gte}")
        if self.lte is not None:
            parts.append(f"Lte {self.lte}")
        return " ".join(parts) or "Exists"

    def describe_allowed(self) -> str:
        """What a holder of this requirement accepts, in plain words: `[r]`, `anything except [t]`."""
        if not self.complement:
            return _listing(self.values) if self.values else "no value (DoesNotExist)"
        parts = []
        if self.gte is not None:
            parts.append(f">= {self.gte}")
        if self.lte is not None:
            parts.append(f"<= {self.lte}")
        text = " and ".join(parts) if parts else "any value"
        return f"{text} except {_listing(self.values)}" if self.values else text

    def to_written(self) -> tuple[Requirement, ...]:
        """The written form; a bounded complement needs more than one requirement."""
        if not self.complement:
            op: Literal["In", "DoesNotExist"] = "In" if self.values else "DoesNotExist"
            return (Requirement(self.key, op, tuple(_sorted_values(self.values)), self.min_values),)
        written: list[Requirement] = []
        if self.values:
            written.append(
                Requirement(self.key, "NotIn", tuple(_sorted_values(self.values)), self.min_values)
            )
        if self.gte is not None:
            written.append(
                Requirement(self.key, "Gte", (str(self.gte),), None if written else self.min_values)
            )
        if self.lte is not None:
            written.append(
                Requirement(self.key, "Lte", (str(self.lte),), None if written else self.min_values)
            )
        return tuple(written) or (Requirement(self.key, "Exists", (), self.min_values),)


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


@dataclass(frozen=True, slots=True)
class Requirements:
    """A frozen, hashable set of `KeyRequirement`s, one per stable label key (sorted by key)."""

    items: tuple[KeyRequirement, ...] = ()
    _index: dict[str, KeyRequirement] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {item.key: item for item in self.items})

    # --- construction -------------------------------------------------------------------------------
    @staticmethod
    def of(requirements: Iterable[Requirement]) -> Requirements:
        """From written requirements; several requirements on one key are intersected."""
        return Requirements.from_keyed(KeyRequirement.from_written(r) for r in requirements)

    @staticmethod
    def from_keyed(items: Iterable[KeyRequirement]) -> Requirements:
        merged: dict[str, KeyRequirement] = {}
        for item in items:
            key = normalize_key(item.key)
            if key != item.key:
                item = KeyRequirement(key, item.complement, item.values, item.gte, item.lte, item.min_values)
            previous = merged.get(key)
            merged[key] = item if previous is None else previous.intersect(item)
        return Requirements(tuple(merged[k] for k in sorted(merged)))

    @staticmethod
    def from_labels(labels: Mapping[str, str] | Iterable[tuple[str, str]]) -> Requirements:
        """Each label becomes `key In [value]`."""
        pairs = labels.items() if isinstance(labels, Mapping) else labels
        return Requirements.from_keyed(KeyRequirement.in_(k, (v,)) for k, v in pairs)

    # --- reading --------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[KeyRequirement]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and normalize_key(key) in self._index

    def get(self, key: str) -> KeyRequirement | None:
        return self._index.get(normalize_key(key))

    def keys(self) -> frozenset[str]:
        return frozenset(self._index)

    def values(self, key: str) -> frozenset[str] | None:
        """The allowed values of `key` when they are a finite list; None when the key is absent or open."""
        item = self.get(key)
        if item is None or item.complement:
            return None
        return item.values

    def allows(self, key: str, value: str) -> bool:
        """Whether a node labelled `key=value` is allowed (a key without a requirement allows anything)."""
        item = self.get(key)
        return item is None or item.has(value)

    def min_values(self, key: str) -> int | None:
        item = self.get(key)
        return None if item is None else item.min_values

    def single_values(self) -> dict[str, str]:
        """Keys pinned to exactly one value: the labels a node launched for these requirements carries."""
        return {
            item.key: next(iter(item.values))
            for item in self.items
            if not item.complement and len(item.values) == 1
        }

    def to_written(self) -> tuple[Requirement, ...]:
        return tuple(written for item in self.items for written in item.to_written())

    def describe(self) -> str:
        return ", ".join(f"{item.key} {item.describe()}" for item in self.items) or "(no requirements)"

    # --- algebra --------------------------------------------------------------------------------------
    def intersect(self, other: Requirements) -> Requirements:
        """Values allowed by both, key by key (a key on one side only is kept as is)."""
        if not other.items:
            return self
        if not self.items:
            return other
        merged = dict(self._index)
        for key, item in other._index.items():
            mine = merged.get(key)
            merged[key] = item if mine is None else mine.intersect(item)
        return Requirements(tuple(merged[k] for k in sorted(merged)))

    def add(self, *items: KeyRequirement | Requirement) -> Requirements:
        """These requirements narrowed by more (written or keyed)."""
        keyed = [i if isinstance(i, KeyRequirement) else KeyRequirement.from_written(i) for i in items]
        return self.intersect(Requirements.from_keyed(keyed))

    def without(self, *keys: str) -> Requirements:
        drop = {normalize_key(k) for k in keys}
        return Requirements(tuple(i for i in self.items if i.key not in drop))

    def compatible(self, other: Requirements) -> bool:
        """Symmetric: every shared key has a common value (or both sides tolerate absence)."""
        return self.incompatibility(other) is None

    def incompatibility(self, other: Requirements, *, subject: str = "the pool") -> str | None:
        """None when compatible; else a reason: "requires K In [c,m] but the pool allows [r]".

        `other` is the side that "requires" and `self` the side (named `subject`) that "allows".
        """
        small, large = (
            (self._index, other._index)
            if len(self._index) <= len(other._index)
            else (other._index, self._index)
        )
        for key in sorted(small):
            if key not in large:
                continue
            mine, theirs = self._index[key], other._index[key]
            if _conflict(mine, theirs):
                return f"requires {key} {theirs.describe()} but {subject} allows {mine.describe_allowed()}"
        return None

    def admits(self, other: Requirements, allow_undefined: frozenset[str] = WELL_KNOWN_LABELS) -> bool:
        """Directional (Karpenter `Compatible`): may something requiring `other` land on a node of `self`?"""
        return self.admission_failure(other, allow_undefined) is None

    def admission_failure(
        self,
        other: Requirements,
        allow_undefined: frozenset[str] = WELL_KNOWN_LABELS,
        *,
        subject: str = "the pool",
    ) -> str | None:
        """Why `other` (a pod's requirements) cannot land on `self` (a pool/claim), or None.

        A custom label the pod requires must be defined by `self`, unless the pod only excludes it
        (NotIn/DoesNotExist); well-known labels in `allow_undefined` may be undefined; shared keys must
        intersect.
        """
        for key in sorted(other._index.keys() - self._index.keys()):
            theirs = other._index[key]
            if key in allow_undefined or theirs.operator in _ABSENCE_TOLERANT:
                continue
            return f"requires {key} {theirs.describe()} but {subject} does not define label {key}"
        return self.incompatibility(other, subject=subject)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with exactly these labels satisfies every requirement."""
        return self.mismatch(labels) is None

    def mismatch(self, labels: Mapping[str, str], *, subject: str = "the node") -> str | None:
        """None when the labels satisfy every requirement; else a reason."""
        stable = _stable_labels(labels)
        for item in self.items:
            value = stable.get(item.key)
            if value is None:
                if not item.matches_absent():
                    return f"requires {item.key} {item.describe()} but {subject} has no label {item.key}"
            elif not item.has(value):
                return f"requires {item.key} {item.describe()} but {subject} has {item.key}={value}"
        return None


def _conflict(a: KeyRequirement, b: KeyRequirement) -> bool:
    if not a.intersect(b).is_empty():
        return False
    return not (a.operator in _ABSENCE_TOLERANT and b.operator in _ABSENCE_TOLERANT)


def _stable_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """Labels under their stable keys; a stable key wins over its beta alias."""
    stable = {key: value for key, value in labels.items() if normalize_key(key) == key}
    for key, value in labels.items():
        stable.setdefault(normalize_key(key), value)
    return stable


def min_values_shortfall(requirements: Requirements, options: Iterable[Requirements]) -> str | None:
    """Whether a list of instance types (given by their requirements) still offers `minValues` distinct
    values for every key that asks for them; None when it does, else a reason."""
    wanted = [(item.key, item.min_values) for item in requirements.items if item.min_values is not None]
    if not wanted:
        return None
    seen: dict[str, set[str]] = {key: set() for key, _ in wanted}
    for option in options:
        for key, _ in wanted:
            values = option.values(key)
            if values:
                seen[key].update(v for v in values if requirements.allows(key, v))
    for key, minimum in wanted:
        if minimum is not None and len(seen[key]) < minimum:
            return f"minValues {minimum} for {key} not met: only {len(seen[key])} distinct values remain"
    return None


EMPTY = Requirements()
