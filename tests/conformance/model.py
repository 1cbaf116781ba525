"""The shape of a conformance case: where it comes from upstream, what it feeds Longshore, what it expects.

Rules: every case names the upstream file and the `It(...)` (or `Entry(...)`) title it translates, so a
reader can open the Karpenter test beside it. A case is data; the runners (`validation`, `scheduling`,
`examples`, `allocatable`) interpret it. `known_bug` marks a case that fails today because of a bug being
fixed elsewhere (it becomes `pytest.mark.xfail(strict=True)`); `difference` marks a deliberate difference,
explained in `docs/conformance.md` (the case then asserts Longshore's documented behaviour instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CORE = "kubernetes-sigs/karpenter"
AWS = "aws/karpenter-provider-aws"


@dataclass(frozen=True)
class Source:
    repo: str
    path: str

    def __str__(self) -> str:
        return f"{self.repo}:{self.path}"


@dataclass(frozen=True)
class Case:
    source: Source
    it: str  # the Ginkgo It/Entry title (with its Describe/Context path where it helps)
    data: dict[str, Any] = field(default_factory=dict)
    known_bug: str | None = None
    difference: str | None = None

    @property
    def id(self) -> str:
        return f"{self.source.path.rsplit('/', 1)[-1]}::{self.it}"
