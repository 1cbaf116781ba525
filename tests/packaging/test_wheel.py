"""What `pip install .` installs: the product with its data, the simulation with its scenarios, the licence.

The wheel is built offline from this checkout (`pip wheel --no-build-isolation --no-deps`, with the pinned
setuptools of the dev group), so this checks exactly what a user's `pip install .` would put on disk.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# pip builds a local project in its own tree (build/, *.egg-info), where two builds at once collide (a module
# fixture runs once per xdist worker): each build gets a copy of what the wheel is made of
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE", "functions", "sim")


def _project_copy(into: Path) -> Path:
    for name in PROJECT_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, into / name)
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(_project_copy(tmp_path_factory.mktemp("project"))),
        ],
        cwd=build,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("longshore-*.whl")
    return zipfile.ZipFile(path)


@pytest.mark.slow
def test_the_wheel_carries_the_ec2_data_the_scenarios_and_the_licence(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "longshore/data/ec2/instance_types.json.gz" in names
    assert "longshore/data/ec2/offerings/us-east-1.json.gz" in names
    assert "longshore/data/ec2/PROVENANCE.json" in names
    assert "longshore/data/prices.json" in names
    assert "longshore_sim/scenarios/seed-inflate.yaml" in names
    assert "longshore_sim/scenarios/clusters/demo.yaml" in names
    assert "longshore_sim/scenarios/events/spot-interruption-warning.json" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "bench/", "infra/")) for n in names)


@pytest.mark.slow
def test_the_simulation_is_an_extra_and_the_runtime_needs_no_moto(wheel: zipfile.ZipFile) -> None:
    (meta_name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    meta = Parser().parsestr(wheel.read(meta_name).decode())
    requires = meta.get_all("Requires-Dist") or []
    runtime = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith(("moto", "jsonpatch", "scipy", "matplotlib")) for r in runtime)
    assert "sim" in (meta.get_all("Provides-Extra") or [])
    assert any(r.startswith("moto") and 'extra == "sim"' in r for r in requires)
