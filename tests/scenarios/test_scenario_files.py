"""Every scenario file loads, with its cluster config, and a bad scenario is refused naming file, field and value."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from longshore_sim.cli.simulate import command as simulate
from longshore_sim.runner import ScenarioRunner
from longshore_sim.scenario import BUNDLED, ScenarioError, load_scenario

SCENARIOS = BUNDLED


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


def test_an_event_step_naming_a_missing_file_is_refused_before_running(tmp_path: Path) -> None:
    path = tmp_path / "event.yaml"
    path.write_text(
        "name: event\nmanifests: [x.yaml]\nduration: 5m\nsteps:\n  - at: 1m\n    event: {file: nope.json}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        ScenarioRunner(load_scenario(path))
    assert (
        str(path) in str(caught.value)
        and "event: file" in str(caught.value)
        and "nope.json" in str(caught.value)
    )


def test_a_step_does_one_thing(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(
        "name: two\nmanifests: [x.yaml]\nduration: 5m\nsteps:\n  - at: 1m\n"
        "    rotate: {nodes: 1}\n    ami: {release: v2}\n"
    )
    with pytest.raises(ScenarioError, match="rotate, ami"):
        load_scenario(path)


def test_simulate_names_a_missing_scenario_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, [str(tmp_path / "nope.yaml")])
    assert result.exit_code != 0 and "nope.yaml" in result.output


def test_the_shipped_scenarios_carry_the_example_cluster_and_events_unchanged() -> None:
    # The scenarios ship inside `longshore_sim` (so an installed `longshore demo` finds them) with their own
    # copies of the example cluster file and the sample events; they must not drift from the originals.
    repo = Path(__file__).resolve().parents[2]
    assert (SCENARIOS / "clusters" / "demo.yaml").read_text() == (repo / "clusters" / "demo.yaml").read_text()
    for event in (SCENARIOS / "events").glob("*.json"):
        assert event.read_text() == (repo / "tests" / "events" / event.name).read_text(), event.name
