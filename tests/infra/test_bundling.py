"""The Lambda asset: what goes in, what stays out, and a real local bundle (marked slow: may download wheels)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
from pathlib import Path

import pytest
from infra.bundling import (
    EXCLUDED_PACKAGE_DIRS,
    PACKAGE_DIR,
    BundleSpec,
    LocalPythonBundling,
    runtime_requirements,
)

pytestmark = [pytest.mark.slow, pytest.mark.cdk]


def test_runtime_requirements_are_the_pinned_runtime_dependencies_without_the_cli() -> None:
    requirements = runtime_requirements()
    names = {req.split("==")[0].split("[")[0] for req in requirements}
    assert {"aws-lambda-powertools", "boto3", "kubernetes", "pydantic", "pyyaml"} <= names
    assert not names & {"click", "rich"}
    assert all("==" in req for req in requirements), "every runtime dependency is pinned"


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "longshore"
    for relative in (
        "__init__.py",
        "handlers/provisioner.py",
        "cli/main.py",
        "core/sim.py",
    ):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(f"# {relative}\n")
    (root / "handlers" / "__pycache__").mkdir()
    (root / "handlers" / "__pycache__" / "provisioner.cpython-311.pyc").write_bytes(b"stale")
    return root


def test_package_files_leave_out_cli_and_caches(tmp_path: Path) -> None:
    spec = BundleSpec(package_dir=_package(tmp_path), requirements=("pyyaml==6.0.3",))
    files = [str(p.relative_to(spec.package_dir)) for p in spec.package_files()]
    assert files == ["__init__.py", "core/sim.py", "handlers/provisioner.py"]
    assert {"cli"} == EXCLUDED_PACKAGE_DIRS  # the simulation is a separate package (`longshore_sim`)


def test_fingerprint_follows_sources_and_pins(tmp_path: Path) -> None:
    package = _package(tmp_path)
    spec = BundleSpec(package_dir=package, requirements=("pyyaml==6.0.3",))
    before = spec.fingerprint()
    assert BundleSpec(package_dir=package, requirements=("pyyaml==6.0.3",)).fingerprint() == before
    assert BundleSpec(package_dir=package, requirements=("pyyaml==6.0.2",)).fingerprint() != before
    (package / "cli" / "main.py").write_text("# changed, but not bundled\n")
    assert spec.fingerprint() == before
    (package / "handlers" / "provisioner.py").write_text("# changed\n")
    assert spec.fingerprint() != before


@pytest.mark.slow
def test_local_bundle_has_our_package_and_arm64_dependencies_with_unchecked_hash_bytecode(
    tmp_path: Path,
) -> None:
    spec = BundleSpec(package_dir=PACKAGE_DIR, requirements=runtime_requirements())
    cache = (
        Path(os.environ.get("LONGSHORE_BUNDLE_CACHE", ""))
        if os.environ.get("LONGSHORE_BUNDLE_CACHE")
        else None
    )
    out = tmp_path / "asset"
    out.mkdir()
    assert LocalPythonBundling(spec, cache).try_bundle(str(out)) is True
    assert (out / "longshore" / "core" / "telemetry.py").is_file()
    assert not (out / "longshore" / "cli").exists() and not (out / "longshore" / "sim").exists()
    assert (out / "kubernetes" / "client").is_dir() and not (out / "kubernetes" / "aio").exists()
    assert not (out / "aiohttp").exists() and not (out / "yarl").exists() and not (out / "multidict").exists()
    assert (
        not (out / "aws_xray_sdk" / "ext" / "aiohttp").exists() and (out / "aws_xray_sdk" / "core").is_dir()
    )
    assert list((out / "pydantic_core").glob("_pydantic_core.cpython-311-aarch64-linux-gnu.so"))
    assert not list((out / "pydantic_core").glob("*x86_64*"))
    assert not (out / "click").exists() and not (out / "rich").exists()
    compiled = out / "longshore" / "core" / "__pycache__" / "telemetry.cpython-311.pyc"
    header = compiled.read_bytes()[:8]
    assert header[:4] == importlib.util.MAGIC_NUMBER
    assert (
        struct.unpack("<I", header[4:8])[0] == 0b01
    )  # hash-based, unchecked: valid under CDK's 1980 zip times
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert size < 250 * 1024 * 1024  # Lambda's unzipped limit
    shutil.rmtree(out)


@pytest.mark.slow
def test_no_handler_imports_what_the_asset_leaves_out() -> None:
    import subprocess
    import sys

    code = (
        "import importlib, pkgutil, sys\n"
        "import longshore.handlers as h\n"
        "for m in pkgutil.iter_modules(h.__path__): importlib.import_module(f'longshore.handlers.{m.name}')\n"
        "print(' '.join(sorted(n for n in sys.modules if n.split('.')[0] in {'aiohttp', 'yarl', 'multidict',"
        " 'frozenlist', 'aiosignal', 'propcache', 'aiohappyeyeballs', 'attr', 'attrs'})))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""
