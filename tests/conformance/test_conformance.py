"""Every conformance case as a pytest test; known bugs are strict xfails (they fail the run once fixed); the cases
of a `slow` suite are marked `slow`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conformance.model import Case
from tests.conformance.suites import SUITES


def _params() -> list[object]:
    params = []
    for suite in SUITES:
        run = suite.run()
        for case in suite.cases():
            marks = (
                [pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"known bug: {case.known_bug}")]
                if case.known_bug
                else []
            )
            if suite.slow:
                marks.append(pytest.mark.slow)
            params.append(pytest.param(run, case, id=f"{suite.name}::{case.id}", marks=marks))
    return params


@pytest.mark.parametrize(("run", "case"), _params())
def test_case(run: Callable[[Case], None], case: Case) -> None:
    run(case)
