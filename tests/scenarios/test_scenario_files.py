"""Every scenario file loads, with its cluster config, and a bad scenario is refused naming file, field and value."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from longshore.cli.simulate import command as simulate
from longshore.sim.runner import ScenarioRunner
from longshore.sim.scenario import ScenarioError, load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_scenario_and_its_cluster_config_load(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    config = ScenarioRunner(scenario).load_config()
    assert config.node_pools
    for workload in scenario.workloads:
        assert scenario.resolve(workload).is_file()


def test_a_bad_value_is_reported_with_file_field_and_value(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nmanifests: [x.yaml]\nduration: 5 minutes\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert (
        str(path) in str(caught.value)
        and "duration" in str(caught.value)
        and "5 minutes" in str(caught.value)
    )


def test_an_unsupported_step_is_refused_before_running(tmp_path: Path) -> None:
    path = tmp_path / "rotate.yaml"
    path.write_text(
        "name: rotate\nmanifests: [x.yaml]\nduration: 5m\nsteps:\n  - at: 1m\n    rotate: {nodes: 1}\n"
    )
    with pytest.raises(ScenarioError, match="rotate"):
        ScenarioRunner(load_scenario(path))


def test_simulate_names_a_missing_scenario_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, [str(tmp_path / "nope.yaml")])
    assert result.exit_code != 0 and "nope.yaml" in result.output
