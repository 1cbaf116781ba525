"""YAML text -> plain Python documents that remember the line of every field.

Theory of operation: PyYAML's composer turns text into a node tree whose nodes carry start marks. Instead
of letting the constructor throw the marks away, we walk the tree ourselves: mappings become dicts,
sequences lists, and scalars are built by the SafeLoader's own constructors (so `3` is an int, `"3"` a str,
`yes` a bool, exactly as every other YAML tool reads them). While walking we record, for every field path
(`("spec", "requirements", 1, "key")`), the 1-based line where it starts. Errors later look up the longest
recorded prefix of their path, so even a missing field points at its parent's line.

Problems found here (invalid YAML, a document that is not a mapping, a duplicated key, an empty file) are
reported as `ConfigError`s; a file with invalid YAML yields no documents at all.

Untrusted text is bounded before it can cost time or memory: the text's size, the nesting depth (checked
while composing, so PyYAML's recursive composer never reaches Python's recursion limit) and the number of
nodes after alias expansion (so an alias bomb is refused after a bounded walk, never expanded). A recursive
alias, a complex key, a scalar its tag cannot read (`!!int 2m`, an invalid `!!timestamp`), an integer outside
64 bits or too long for Python's int/str limit, a non-finite float and a string holding a control character
are each a located error, and the file then yields no documents.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import Node, ScalarNode, SequenceNode

from longshore.config.errors import ConfigError, format_path

PathKey = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document of a file: its data (a mapping), its position, and the line of every field."""

    source: str  # the file name as the user gave it (or the label of a text source)
    index: int  # 1-based position of the document in its file
    data: dict[str, Any]
    line: int
    lines: dict[PathKey, int] = field(default_factory=dict, compare=False)

    def line_of(self, path: PathKey) -> int:
        """The line of `path`, or of its nearest recorded ancestor."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return found
        return self.line

    @property
    def kind(self) -> str:
        kind = self.data.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def api_version(self) -> str:
        api_version = self.data.get("apiVersion")
        return api_version if isinstance(api_version, str) else ""

    @property
    def name(self) -> str:
        metadata = self.data.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        return name if isinstance(name, str) else ""

    @property
    def label(self) -> str:
        """How errors name this document: `Kind/name`, falling back to its position in the file."""
        if self.kind and self.name:
            return f"{self.kind}/{self.name}"
        if self.kind:
            return f"{self.kind} (document {self.index})"
        return f"document {self.index}"

    def error(self, path: PathKey, message: str, value: object = None) -> ConfigError:
        """A located error about `path` in this document."""
        return ConfigError(
            file=self.source,
            document=self.label,
            path=format_path(path) or None,
            value=value,
            line=self.line_of(path),
            message=message,
        )


#: Bounds on one YAML text. Kubernetes reads manifests with go-yaml, which refuses "excessive aliasing"
#: (yaml.v3 decode.go, `allowedAliasRatio`); these bounds do the same job for PyYAML, whose constructor would
#: otherwise expand a 549-byte alias bomb into gigabytes, and whose composer recurses once per nesting level.
MAX_TEXT_CHARS = 4 * 1024 * 1024
MAX_NODES = 250_000  # nodes after alias expansion, per text
MAX_DEPTH = 100  # nesting levels (aliases count where they are used)
MAX_NUMBER_CHARS = 100  # a plain scalar read as a number (YAML 1.1 sexagesimal `1:2:3` grows as 60**n)
INT64 = 2**63  # integers outside [-2**63, 2**63) cannot be a Kubernetes field
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})


class _Refused(Exception):
    """A text this module will not read any further (too big, too deep, too many nodes)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting bound and a node budget checked while composing."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0
        self.composed = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self.depth += 1
        self.composed += 1
        try:
            if self.depth > MAX_DEPTH or self.composed > MAX_NODES:
                line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
                raise _Refused(_too_deep() if self.depth > MAX_DEPTH else _too_many(), line)
            return super().compose_node(parent, index)  # type: ignore[no-untyped-call, no-any-return]
        finally:
            self.depth -= 1


def _too_deep() -> str:
    return f"the YAML is nested more than {MAX_DEPTH} levels deep (counting aliases where they are used)"


def _too_many() -> str:
    return (
        f"the YAML holds more than {MAX_NODES:,} values once aliases are expanded "
        "(an alias bomb, or a file far larger than any cluster configuration)"
    )


class _Builder:
    """Walks composed nodes into Python values, recording the line of every path.

    Aliases are followed where they are used, so the walk is bounded by `MAX_DEPTH` and by the node budget
    it shares with the composer; an alias inside its own anchor (a recursive alias) is refused.
    """

    def __init__(self, loader: _BoundedLoader, source: str) -> None:
        self.loader = loader
        self.source = source
        self.lines: dict[PathKey, int] = {}
        self.errors: list[ConfigError] = []
        self.fatal: list[ConfigError] = []  # values that cannot be read: the text yields no documents
        self.active: set[int] = set()  # the collections being built (a repeat is a recursive alias)
        self.built: set[int] = set()  # every collection built so far (a repeat is an alias)
        self.alias_line: int | None = None  # where the outermost alias being expanded is used

    def build(self, node: Node, path: PathKey) -> Any:
        line = self.lines.setdefault(path, node.start_mark.line + 1)
        self.loader.composed += 1
        if len(path) > MAX_DEPTH:
            raise _Refused(_too_deep(), self.alias_line or line)
        if self.loader.composed > 2 * MAX_NODES:
            raise _Refused(_too_many(), self.alias_line or line)
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if id(node) in self.active:
            raise _Refused("a recursive alias: an anchor is used inside its own value", line)
        outermost = self.alias_line is None and id(node) in self.built
        if outermost:  # an alias inside a list is located at its list (its own mark is the anchor's)
            self.alias_line = self.lines.get(path[:-1], line) if path and isinstance(path[-1], int) else line
        self.active.add(id(node))
        self.built.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
            return self.mapping(node, path)
        finally:
            self.active.discard(id(node))
            if outermost:
                self.alias_line = None

    def mapping(self, node: Node, path: PathKey) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.key(key_node, path)
            if key in result:
                self.errors.append(
                    ConfigError(
                        file=self.source,
                        line=key_node.start_mark.line + 1,
                        path=format_path((*path, str(key))) or None,
                        value=key,
                        message=f"duplicate key '{key}' in the same mapping",
                    )
                )
                continue
            child: PathKey = (*path, key if isinstance(key, str) else str(key))
            self.lines[child] = key_node.start_mark.line + 1
            result[key] = self.build(value_node, child)
        return result

    def key(self, node: Node, path: PathKey) -> Any:
        if not isinstance(node, ScalarNode):
            kind = "list" if isinstance(node, SequenceNode) else "mapping"
            self.refuse(node, path, f"a mapping key must be a plain value, not a {kind}")
            return f"<{kind} key at line {node.start_mark.line + 1}>"
        key = self.scalar(node, path)
        return key if isinstance(key, str | int | float | bool) or key is None else str(key)

    def scalar(self, node: ScalarNode, path: PathKey) -> Any:
        if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
            return self.refuse(
                node, path, f"a number of {len(node.value):,} characters is out of range", node.value
            )
        try:
            value = self.loader.construct_object(node, deep=True)
        except (ValueError, TypeError, OverflowError, yaml.YAMLError) as exc:
            detail = getattr(exc, "problem", None) or str(exc)
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            return self.refuse(
                node,
                path,
                f"cannot read {_short(node.value)!r} as {tag} ({detail}); quote the value to make it a string",
                node.value,
            )
        if isinstance(value, int) and not isinstance(value, bool) and not -INT64 <= value < INT64:
            return self.refuse(
                node, path, "the integer is out of range (a field holds at most 64 bits)", value
            )
        if isinstance(value, float) and not math.isfinite(value):
            return self.refuse(node, path, "the number is not finite (no field accepts .inf or .nan)", value)
        if isinstance(value, str) and _CONTROL.search(value):
            code = ord(_CONTROL.search(value).group())  # type: ignore[union-attr]
            return self.refuse(node, path, f"the string holds the control character U+{code:04X}", value)
        return value

    def refuse(self, node: Node, path: PathKey, message: str, value: object = None) -> None:
        self.fatal.append(
            ConfigError(
                file=self.source,
                line=node.start_mark.line + 1,
                path=format_path(path) or None,
                value=_short(value) if isinstance(value, str) else value,
                message=message,
            )
        )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def parse_documents(text: str, source: str) -> tuple[list[Document], list[ConfigError]]:
    """Parse a (multi-document) YAML text. Returns the mapping documents and every problem found.

    Empty documents (a bare `---`) are skipped, as kubectl does; a text with no documents at all is an error.
    On invalid YAML, a value that cannot be read, or a text past the bounds above, no document of the text
    is returned.
    """
    if len(text) > MAX_TEXT_CHARS:
        return [], [
            ConfigError(
                file=source,
                message=f"the file holds {len(text):,} characters; at most {MAX_TEXT_CHARS:,} are read",
            )
        ]
    try:
        loader = _BoundedLoader(text)
    except yaml.reader.ReaderError as exc:
        return [], [_reader_error(text, source, exc)]
    try:
        documents, errors, fatal = _compose_all(loader, source)
    except _Refused as exc:
        return [], [ConfigError(file=source, line=exc.line, message=exc.message)]
    except yaml.MarkedYAMLError as exc:
        return [], [_yaml_error(source, exc)]
    except yaml.reader.ReaderError as exc:
        return [], [_reader_error(text, source, exc)]
    except yaml.YAMLError as exc:
        return [], [ConfigError(file=source, message=f"invalid YAML: {exc}")]
    finally:
        loader.dispose()
    if fatal:
        return [], fatal
    if not documents and not errors:
        errors.append(ConfigError(file=source, message="the file is empty: it holds no YAML documents"))
    return documents, errors


def _compose_all(
    loader: _BoundedLoader, source: str
) -> tuple[list[Document], list[ConfigError], list[ConfigError]]:
    documents: list[Document] = []
    errors: list[ConfigError] = []
    fatal: list[ConfigError] = []
    index = 0
    while loader.check_node():
        node = loader.get_node()
        index += 1
        if node is None:
            continue
        builder = _Builder(loader, source)
        data = builder.build(node, ())
        fatal.extend(builder.fatal)
        line = node.start_mark.line + 1
        label = Document(source, index, data, line).label if isinstance(data, dict) else f"document {index}"
        errors.extend(dataclasses.replace(error, document=label) for error in builder.errors)
        if data is None:
            continue
        if not isinstance(data, dict):
            errors.append(
                ConfigError(
                    file=source,
                    document=f"document {index}",
                    line=line,
                    value=data if not isinstance(data, list) else None,
                    message=f"a document must be a mapping (apiVersion, kind, metadata, spec), "
                    f"got a {_type_name(data)}",
                )
            )
            continue
        documents.append(Document(source, index, data, line, builder.lines))
    return documents, errors, fatal


def _yaml_error(source: str, exc: yaml.MarkedYAMLError) -> ConfigError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    hint = _YAML_HINTS.get(problem, "")
    return ConfigError(
        file=source,
        line=mark.line + 1 if mark is not None else None,
        message=f"invalid YAML: {problem}{context}{hint}",
    )


def _reader_error(text: str, source: str, exc: yaml.reader.ReaderError) -> ConfigError:
    line = text.count("\n", 0, max(exc.position, 0)) + 1
    character = exc.character if isinstance(exc.character, int) else 0
    return ConfigError(
        file=source,
        line=line,
        message=f"invalid YAML: the control character U+{character:04X} is not allowed in YAML text",
    )


_YAML_HINTS = {
    "mapping values are not allowed here": (
        "; a value containing ': ' must be quoted, or the line is mis-indented"
    ),
    "found character '\\t' that cannot start any token": "; YAML indentation must use spaces, not tabs",
}


def _type_name(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return f"string {value!r}"
    return f"{type(value).__name__} {value!r}"
