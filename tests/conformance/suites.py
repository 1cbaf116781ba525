"""The four conformance suites: each is a runner and the case modules it runs (one module per upstream file).

`python -m tests.conformance` and `test_conformance.py` both read this table, so the printed counts and the
pytest run cover the same cases.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from tests.conformance.model import Case


@dataclass(frozen=True)
class Suite:
    name: str
    runner: str  # module with `run(case)`
    modules: tuple[str, ...]  # modules with `CASES`
    slow: bool = False  # its cases are marked `slow` (out of the `-m "not slow"` loop; tests/README.md)

    def run(self) -> Callable[[Case], None]:
        return importlib.import_module(f"tests.conformance.{self.runner}").run  # type: ignore[no-any-return]

    def cases(self) -> list[Case]:
        found: list[Case] = []
        for module in self.modules:
            found.extend(importlib.import_module(f"tests.conformance.cases.{module}").CASES)
        return found


SUITES = (
    Suite(
        "scheduling",
        "scheduling",
        ("scheduling_suite", "scheduling_topology", "scheduling_instance_selection", "provisioning_suite"),
        slow=True,  # 238 placements on real catalogs: about 25 s, three quarters of the conformance run
    ),
    Suite(
        "validation",
        "validation",
        (
            "validation_core_nodepool",
            "validation_aws_ec2nodeclass",
            "validation_misc",
            "validation_core_nodeoverlay",
        ),
    ),
    Suite("examples", "examples", ("examples",), slow=True),  # whole example manifests solved: about 5 s
    Suite("allocatable", "allocatable", ("allocatable_instancetype",)),
)
