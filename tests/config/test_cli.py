"""`longshore validate` and `longshore demo` through click's CliRunner, plus the shared `--config` options."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from longshore.cli.main import main
from longshore.cli.options import config_options, load_from_options
from longshore.config import load_cluster
from tests.conftest import INVALID_MANIFESTS, REPO, VALID_MANIFESTS, VALID_V1_MANIFESTS

VALID = sorted(VALID_MANIFESTS.glob("*.yaml")) + sorted(VALID_V1_MANIFESTS.glob("*.yaml"))


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("path", VALID, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_validate_exits_0_on_every_valid_fixture_and_shows_its_pools(path: Path) -> None:
    result = run("validate", str(path))
    assert result.exit_code == 0, result.output
    config = load_cluster([path])
    assert f"valid: 1 file(s), {len(config.node_pools)} pool(s)" in result.output
    for pool in config.node_pools:
        assert f"│ {pool.name} " in result.output
        assert f"│ {pool.origin.dialect} " in result.output


EXPECTED_WORDS = {
    "01-label-typo.yaml": "unknown field 'label' (did you mean 'labels'?)",
    "02-broken-requirement-key.yaml": "02-broken-requirement-key.yaml:9: invalid YAML",
    "03-restricted-label-domain.yaml": "restricted domain 'karpenter.sh'",
    "04-empty-ttl-with-consolidation.yaml": "consolidation.enabled and ttlSecondsAfterEmpty cannot be used together",
    "05-missing-node-template.yaml": "'does-not-exist'",
}


@pytest.mark.parametrize("path", sorted(INVALID_MANIFESTS.glob("*.yaml")), ids=lambda p: p.name)
def test_validate_exits_non_zero_on_every_invalid_fixture_printing_the_message(path: Path) -> None:
    result = run("validate", str(path))
    assert result.exit_code == 1
    assert EXPECTED_WORDS[path.name] in result.output
    assert "Node pools" not in result.output


def test_validate_loads_all_files_as_one_cluster_by_default() -> None:
    result = run("validate", *map(str, VALID[:2]))
    assert result.exit_code == 1
    assert "duplicate pool name 'default'" in result.output


def test_validate_each_checks_files_separately_and_lists_the_bad_ones() -> None:
    bad = INVALID_MANIFESTS / "01-label-typo.yaml"
    result = run("validate", "--each", *map(str, VALID), str(bad))
    assert result.exit_code == 1
    assert "unknown field 'label'" in result.output
    assert "savings-plan-instance" in result.output and "c6i-workers" in result.output


def test_validate_json_prints_the_normalised_model() -> None:
    result = run(
        "validate",
        "--json",
        "--cluster-name",
        "seed",
        "--region",
        "eu-west-1",
        str(VALID_MANIFESTS / "06-workernode-al2.yaml"),
    )
    assert result.exit_code == 0, result.output
    model = json.loads(result.output)
    assert (model["name"], model["region"]) == ("seed", "eu-west-1")
    pool = model["node_pools"][0]
    assert pool["labels"] == {"node-type": "workernode"}
    assert pool["disruption"]["consolidate_after_seconds"] == 300
    assert pool["expiry"] == {"after_seconds": None, "forceful": False}
    assert model["node_classes"][0]["tags"]["Revision"] == "3.0"


def test_validate_json_keeps_limits_as_quantities() -> None:
    result = run("validate", "--json", str(VALID_MANIFESTS / "02-spot-limits.yaml"))
    assert json.loads(result.output)["node_pools"][0]["limits"] == {
        "cpu": "1000",
        "memory": "1000Gi",
        "nvidia.com/gpu": "2",
    }


def test_validate_needs_a_file() -> None:
    assert run("validate").exit_code == 2


@click.command()
@config_options
def _echo_pools(config_paths: tuple[Path, ...], region: str, cluster_name: str) -> None:
    config = load_from_options(config_paths, region, cluster_name)
    click.echo(f"{config.name} {config.region} {','.join(p.name for p in config.node_pools)}")


def test_config_options_accept_plain_manifests_with_region_and_cluster_name() -> None:
    result = CliRunner().invoke(
        _echo_pools,
        [
            "-c",
            str(VALID_MANIFESTS / "04-weighted-savings-plan.yaml"),
            "--region",
            "eu-west-1",
            "--cluster-name",
            "x",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "x eu-west-1 savings-plan-instance,default"


def test_config_options_default_to_demo_in_us_east_1_and_accept_a_cluster_config() -> None:
    plain = CliRunner().invoke(_echo_pools, ["--config", str(VALID_MANIFESTS / "02-spot-limits.yaml")])
    assert plain.output.strip() == "demo us-east-1 default"
    cluster = CliRunner().invoke(_echo_pools, ["--config", str(REPO / "clusters" / "demo.yaml")])
    assert cluster.output.strip() == "demo us-east-1 general,spot-batch"


def test_config_errors_are_printed_and_exit_2() -> None:
    result = CliRunner().invoke(
        _echo_pools, ["--config", str(INVALID_MANIFESTS / "05-missing-node-template.yaml")]
    )
    assert result.exit_code == 2
    assert "1 configuration error:" in result.output and "'does-not-exist'" in result.output


def test_config_options_need_a_config() -> None:
    result = CliRunner().invoke(_echo_pools, [])
    assert result.exit_code == 2 and "--config" in result.output
