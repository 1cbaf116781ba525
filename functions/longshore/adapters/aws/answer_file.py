"""An EC2 answer saved to a file, for the offline commands' `--reservations FILE` and `--placement-groups FILE`.

Rules: the file is JSON or YAML and holds the response (`{"<Key>": [...]}`, what `aws ec2 describe-...`
prints) or the bare list of entries. Every problem is reported, all at once, naming the file (and the line of a
YAML error); an entry's problems name it as `<Key>[i].Field` with the value (`shown`). The caller's `check`
validates one entry's fields and fills in defaults; the `unique` fields must differ between entries. Only
entries without problems are returned, and only when no entry has any.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

Check = Callable[[dict[str, Any]], tuple[dict[str, Any], list[str]]]
"""An entry -> (the entry with defaults filled in, what is wrong with it: `Field: ...` messages)."""


class AnswerFileError(ValueError):
    """The file could not be read or holds invalid entries; `problems` lists each (file, field, value)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


def load_entries(
    path: Path,
    key: str,
    call: str,
    noun: str,
    check: Check,
    unique: tuple[str, ...],
    error: type[AnswerFileError] = AnswerFileError,
) -> tuple[dict[str, Any], ...]:
    """The checked entries of the `call` answer in `path` (its list under `key`, entries called `noun`)."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as failure:
        raise error([f"{path}: cannot read the file: {failure.strerror or failure}"]) from None
    except yaml.YAMLError as failure:
        mark = getattr(failure, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(failure, "problem", None) or str(failure)
        raise error([f"{path}{where}: not JSON or YAML: {problem}"]) from None
    if document is None:
        raise error([f"{path}: the file is empty (expected a {call} answer)"])
    entries = document[key] if isinstance(document, Mapping) and key in document else document
    if not isinstance(entries, list):
        raise error(
            [
                f"{path}: expected a {call} answer ({{'{key}': [...]}}) or a list of {noun}, got {shown(document)}"
            ]
        )
    problems: list[str] = []
    found: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: {key}[{index}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: expected a mapping of fields, got {shown(entry)}")
            continue
        checked, wrong = check(dict(entry))
        problems.extend(f"{where}.{message}" for message in wrong)
        for field in unique:
            value = checked.get(field)
            if isinstance(value, str) and value:
                if (field, value) in seen:
                    problems.append(f"{where}.{field}: {value!r} is also {key}[{seen[field, value]}]")
                seen.setdefault((field, value), index)
        if not wrong:
            found.append(checked)
    if problems:
        raise error(problems)
    return tuple(found)


def shown(value: Any) -> str:
    """A value as a problem names it: its type and the start of its repr."""
    if value is None:
        return "nothing (the field is missing or null)"
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
