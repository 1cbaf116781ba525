"""Configuration errors a user can cause, and the sink that collects all of them before anything is loaded.

Theory of operation: loading never stops at the first mistake. Every stage (YAML parsing, schema validation,
Karpenter's rules, cross-document references) reports into one `ErrorSink`; the loader raises a single
`ConfigErrors` holding all of them at the end of a stage that found any, so the user fixes everything in one
pass and no half-loaded configuration ever escapes. Each `ConfigError` names the file, the document
(`Kind/name`), the field path (`spec.requirements[1].key`), the offending value and, when the YAML gives one,
the line, and prints the way compilers do: `pools.yaml:12: Provisioner/default: spec.label: unknown field ...`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ConfigError:
    """One thing wrong with the configuration, located as precisely as the input allows."""

    file: str
    message: str
    document: str | None = None  # "Provisioner/default", or "document 2" when the kind/name are unknown
    path: str | None = None  # "spec.requirements[1].key"; None for whole-document or whole-file errors
    value: object = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        parts = [where]
        if self.document:
            parts.append(self.document)
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)

    def sort_key(self) -> tuple[str, int, str]:
        return (self.file, self.line if self.line is not None else 0, self.path or "")


class ConfigErrors(Exception):
    """Raised when a configuration has errors; holds every one found (never just the first)."""

    def __init__(self, errors: Iterable[ConfigError]) -> None:
        self.errors: tuple[ConfigError, ...] = tuple(errors)
        super().__init__(self.summary())

    def summary(self) -> str:
        count = len(self.errors)
        header = f"{count} configuration error{'s' if count != 1 else ''}:"
        return "\n".join([header, *(f"  {error}" for error in self.errors)])

    def __str__(self) -> str:
        return self.summary()

    def __iter__(self) -> Iterator[ConfigError]:
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)


@dataclass(slots=True)
class ErrorSink:
    """Collects errors across files and stages; `raise_if_any` ends a stage that found mistakes.

    A repeated error is kept once. Each error is looked up by a hashable key (its value by `repr` when the
    value is a list or mapping), so collecting n errors costs O(n), never O(n**2).
    """

    errors: list[ConfigError] = field(default_factory=list)
    _seen: set[tuple[object, ...]] = field(default_factory=set, repr=False)

    def add(self, error: ConfigError) -> None:
        key = _key(error)
        if key not in self._seen:
            self._seen.add(key)
            self.errors.append(error)

    def extend(self, errors: Iterable[ConfigError]) -> None:
        for error in errors:
            self.add(error)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self, file_order: Sequence[str] = ()) -> None:
        if not self.errors:
            return
        rank = {name: index for index, name in enumerate(file_order)}
        ordered = sorted(self.errors, key=lambda e: (rank.get(e.file, len(rank)), *e.sort_key()))
        raise ConfigErrors(ordered)


def _key(error: ConfigError) -> tuple[object, ...]:
    value = error.value
    try:
        hash(value)
    except TypeError:
        value = (type(value).__name__, repr(value))
    return (error.file, error.message, error.document, error.path, error.line, value)


def suggestion(word: str, choices: Iterable[str]) -> str:
    """A ` (did you mean 'x'?)` hint for a misspelt `word`, or "" when nothing is close."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def format_path(parts: Sequence[str | int]) -> str:
    """`("spec", "requirements", 1, "key")` -> `spec.requirements[1].key`."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text
