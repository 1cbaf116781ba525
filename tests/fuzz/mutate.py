"""Structure-aware mutations of Longshore's own valid inputs, as Hypothesis strategies.

Theory of operation: a seed (a parsed YAML document set, an EventBridge event, a workflow input) is a tree of
dicts, lists and scalars. A mutation picks one place in the tree and changes it the way a careless or hostile
author would: a value of the wrong type or out of range, a deleted or unknown field, a duplicated list item,
deep nesting. The tree is then written back as text (YAML or JSON) and a text mutation may follow: YAML
tags, anchors and aliases, an alias bomb, control characters, a number too long for Python's int/str limit,
a truncation. Values that a serialiser cannot write (a 5,000-digit integer, 1,000 levels of nesting) travel
as marker strings that `render_*` replaces in the text.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import strategies as st

HUGE_INT = "<<HUGE_INT>>"
DEEP = "<<DEEP>>"
LONG_DURATION = "9" * 400 + "h"

#: Scalars that stress the loaders' bounds and types.
INTERESTING: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**63,
    -(2**63) - 1,
    10**400,
    1e308,
    -0.0,
    0.5,
    True,
    False,
    None,
    "",
    " ",
    "0",
    "-1",
    "Never",
    "0s",
    "1h",
    LONG_DURATION,
    "300000000h",
    "1e999999Ei",
    "9" * 70,
    "1e30",
    "-5Gi",
    "nan",
    "inf",
    "10%",
    "101%",
    "* * * * *",
    "@daily",
    "not a cron",
    "i-0123456789abcdef0",
    "i-NOTANID",
    "a" * 300,
    "\x00",
    "\x1b[31m",
    "\u202e",
    "ü",
    "😀",
    "a\nb",
    "a: b",
    "{}",
    "[]",
    "karpenter.sh/nodepool",
    "kubernetes.io/arch",
    "In",
    "NotIn",
    "Exists",
    "Gt",
    "Lt",
    "amd64",
    "spot",
    "on-demand",
    "2024-03-18T15:40:12Z",
    "Wed, 20 Mar 2024 06:00:00 GMT",
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z",
    HUGE_INT,
    DEEP,
    [],
    {},
    [None],
    {"": None},
]

scalars = st.one_of(
    st.sampled_from(INTERESTING),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.booleans(),
    st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=6,
)


def _places(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(tree, dict):
        for key, child in tree.items():
            found.extend(_places(child, (*path, key)))
    elif isinstance(tree, list):
        for index, child in enumerate(tree):
            found.extend(_places(child, (*path, index)))
    return found


def _get(tree: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        tree = tree[part]
    return tree


@st.composite
def mutated_tree(draw: st.DrawFn, seed: Any, max_mutations: int = 3) -> Any:
    """`seed` (deep-copied) with one to `max_mutations` structural mutations."""
    tree = copy.deepcopy(seed)  # values drawn below are deep-copied too: a later mutation must not alter a
    # constant of the strategy (Hypothesis replays draws and requires the same data each time)
    for _ in range(draw(st.integers(1, max_mutations))):
        places = _places(tree)
        path = draw(st.sampled_from(places))
        operation = draw(st.sampled_from(["replace", "replace", "delete", "insert", "duplicate", "wrap"]))
        if not path:
            if operation == "replace":
                tree = copy.deepcopy(draw(values))
            continue
        parent, last = _get(tree, path[:-1]), path[-1]
        if operation == "replace":
            parent[last] = copy.deepcopy(draw(values))
        elif operation == "delete":
            del parent[last]
        elif operation == "insert" and isinstance(parent, dict):
            parent[draw(st.sampled_from([*map(str, parent), "extra", "spec", "kind", "detail"]))] = draw(
                values
            )
        elif operation == "insert" and isinstance(parent, list):
            parent.insert(draw(st.integers(0, len(parent))), copy.deepcopy(draw(values)))
        elif operation == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        elif operation == "wrap":
            parent[last] = draw(st.sampled_from([[parent[last]], {"x": parent[last]}]))
    return tree


def _markers(text: str, quote: Callable[[str], list[str]]) -> str:
    for marker, replacement in ((HUGE_INT, "9" * 5000), (DEEP, "[" * 1000 + "]" * 1000)):
        for form in quote(marker):
            text = text.replace(form, replacement)
    return text


#: Text-level YAML mutations: each returns a function of (text, position) -> text.
_YAML_SNIPPETS = [
    "!!int 2m",
    "!!float xx",
    "!!timestamp 2020-99-99",
    "!!binary zz",
    "!!python/object:os.system x",
    "&a [*a]",
    "*undefined",
    "{<<: {a: 1}}",
    "? [a, b]\n  : 1",
    '"\\x01"',
    "\x07",
    "\t",
    "\ufeff",
    "1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20",
    "0x" + "f" * 200,
    "9" * 5000,
    "[" * 1000 + "]" * 1000,
    "{" * 300 + "}" * 300,
    ".inf",
    ".nan",
    "~",
    "---",
    "...",
    "%YAML 1.1",
]

BOMB = 'lol0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"lol{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)
)


@st.composite
def yaml_text(draw: st.DrawFn, seeds: list[list[Any]]) -> str:
    """A multi-document YAML text: a mutated seed, then zero to two text mutations."""
    documents = draw(st.sampled_from(seeds))
    mutated = draw(mutated_tree(documents))
    documents = mutated if isinstance(mutated, list) else [mutated]
    text = yaml.safe_dump_all(documents, sort_keys=False)
    text = _markers(text, lambda m: [f"'{m}'", f'"{m}"', m])
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(
            st.sampled_from(["snippet", "snippet", "truncate", "duplicate-line", "drop-line", "bomb"])
        )
        lines = text.split("\n")
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        if kind == "snippet":
            line = lines[at]
            head, sep, _ = line.partition(": ")
            snippet = draw(st.sampled_from(_YAML_SNIPPETS))
            lines[at] = f"{head}: {snippet}" if sep else f"{line} {snippet}"
        elif kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
            continue
        elif kind == "duplicate-line":
            lines.insert(at, lines[at])
        elif kind == "drop-line" and lines:
            del lines[at]
        elif kind == "bomb":
            lines.insert(at, BOMB)
        text = "\n".join(lines)
    return text


@st.composite
def json_text(draw: st.DrawFn, seeds: list[Any]) -> str:
    """A JSON text: a mutated seed, sometimes cut short or given a huge number, NaN or deep nesting."""
    document = draw(mutated_tree(draw(st.sampled_from(seeds))))
    text = json.dumps(document, allow_nan=True)
    text = _markers(text, lambda m: [f'"{m}"'])
    kind = draw(st.sampled_from(["none", "none", "none", "truncate", "garbage", "huge", "nan", "deep"]))
    if kind == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif kind == "garbage":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=8)) + text[at:]
    elif kind in ("huge", "nan", "deep"):
        replacement = {"huge": "9" * 5000, "nan": "NaN", "deep": "[" * 100_000 + "]" * 100_000}[kind]
        at = text.find(":")
        if at >= 0:
            end = text.find(",", at)
            text = text[: at + 1] + replacement + (text[end:] if end >= 0 else "}")
    return text
