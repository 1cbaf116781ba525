"""Resolve a Cluster document's `spec.include` patterns to files, confined to the cluster file's directory.

Theory of operation: each pattern is a path or glob relative to the directory of the cluster file. A match is
kept only when its real path (symbolic links followed) lies under that directory's real path, so a
configuration can never read `/etc/passwd`, `../../secrets.yaml` or a link that points out of its own tree;
such a pattern is a located error naming the pattern, and a pattern matching nothing is one too.
"""

from __future__ import annotations

import glob
from pathlib import Path

from longshore.config.errors import ConfigError
from longshore.config.yaml_documents import Document


def resolve_includes(cluster: Document, patterns: list[object]) -> tuple[list[Path], list[ConfigError]]:
    """The files `patterns` (the `spec.include` list) name, in order, and an error per refused pattern."""
    base = Path(cluster.source).parent
    root = base.resolve()
    files: list[Path] = []
    errors: list[ConfigError] = []
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, str):
            continue  # reported by the schema
        path = ("spec", "include", index)
        try:
            matches = sorted(glob.glob(str(base / pattern), recursive=True))
        except (OSError, ValueError) as exc:
            errors.append(cluster.error(path, f"include {pattern!r} cannot be read: {exc}", pattern))
            continue
        found = [Path(m) for m in matches if Path(m).is_file()]
        outside = [m for m in found if not m.resolve().is_relative_to(root)]
        if outside:
            errors.append(
                cluster.error(
                    path,
                    f"include {pattern!r} names {outside[0]}, which is outside the cluster file's directory "
                    f"{base or '.'}; an include may only read files under it",
                    pattern,
                )
            )
            continue
        if not found:
            errors.append(
                cluster.error(
                    path,
                    f"include {pattern!r} matches no file (paths are relative to {base or '.'})",
                    pattern,
                )
            )
        files.extend(found)
    return files, errors
