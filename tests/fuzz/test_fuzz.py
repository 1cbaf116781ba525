"""A short, deterministic fuzz run of every target in the normal suite; `make fuzz` runs the long one."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.targets import TARGETS


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, t in TARGETS.items() if t.short_examples))
def test_mutated_inputs_end_in_a_result_or_a_clear_error(name: str) -> None:
    target = TARGETS[name]

    @settings(
        max_examples=target.short_examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )
    @given(target.strategy)
    def check(value: object) -> None:
        target.run(value)

    check()
