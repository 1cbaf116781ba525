"""YAML text -> plain Python documents that remember the line of every field.

Theory of operation: PyYAML's composer turns text into a node tree whose nodes carry start marks. Instead
of letting the constructor throw the marks away, we walk the tree ourselves: mappings become dicts,
sequences lists, and scalars are built by the SafeLoader's own constructors (so `3` is an int, `"3"` a str,
`yes` a bool, exactly as every other YAML tool reads them). While walking we record, for every field path
(`("spec", "requirements", 1, "key")`), the 1-based line where it starts. Errors later look up the longest
recorded prefix of their path, so even a missing field points at its parent's line.

Problems found here (invalid YAML, a document that is not a mapping, a duplicated key, an empty file) are
reported as `ConfigError`s; a file with invalid YAML yields no documents at all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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


class _Builder:
    """Walks composed nodes into Python values, recording the line of every path."""

    def __init__(self, loader: yaml.SafeLoader, source: str) -> None:
        self.loader = loader
        self.source = source
        self.lines: dict[PathKey, int] = {}
        self.errors: list[ConfigError] = []

    def build(self, node: Node, path: PathKey) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, MappingNode):
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.build_scalar_key(key_node)
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
        if isinstance(node, SequenceNode):
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        return self.loader.construct_object(node, deep=True)

    def build_scalar_key(self, node: Node) -> Any:
        if isinstance(node, ScalarNode):
            key = self.loader.construct_object(node, deep=True)
            return key if isinstance(key, str | int | float | bool) or key is None else str(key)
        return yaml.safe_dump(self.loader.construct_object(node, deep=True)).strip()


def parse_documents(text: str, source: str) -> tuple[list[Document], list[ConfigError]]:
    """Parse a (multi-document) YAML text. Returns the mapping documents and every problem found.

    Empty documents (a bare `---`) are skipped, as kubectl does; a text with no documents at all is an error.
    On invalid YAML no document of the text is returned.
    """
    loader = yaml.SafeLoader(text)
    documents: list[Document] = []
    errors: list[ConfigError] = []
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if node is None:
                continue
            builder = _Builder(loader, source)
            data = builder.build(node, ())
            line = node.start_mark.line + 1
            label = (
                Document(source, index, data, line).label if isinstance(data, dict) else f"document {index}"
            )
            errors.extend(dataclasses.replace(error, document=label) for error in builder.errors)
            if data is None:
                continue
            if not isinstance(data, dict):
                errors.append(
                    ConfigError(
                        file=source,
                        document=f"document {index}",
                        line=line,
                        value=data,
                        message=f"a document must be a mapping (apiVersion, kind, metadata, spec), "
                        f"got a {_type_name(data)}",
                    )
                )
                continue
            documents.append(Document(source, index, data, line, builder.lines))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        hint = _YAML_HINTS.get(problem, "")
        return [], [
            ConfigError(
                file=source,
                line=mark.line + 1 if mark is not None else None,
                message=f"invalid YAML: {problem}{context}{hint}",
            )
        ]
    except yaml.YAMLError as exc:
        return [], [ConfigError(file=source, message=f"invalid YAML: {exc}")]
    finally:
        loader.dispose()
    if not documents and not errors:
        errors.append(ConfigError(file=source, message="the file is empty: it holds no YAML documents"))
    return documents, errors


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
