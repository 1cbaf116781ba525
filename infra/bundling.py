"""The Lambda code asset: our package plus its runtime dependencies, bundled locally, without Docker.

Theory of operation: `cdk synth` asks `LocalPythonBundling.try_bundle` for the asset. It
  1. installs the runtime dependencies (pyproject's `[project].dependencies` minus the CLI-only ones) for
     Lambda's platform (manylinux aarch64, CPython of the runtime's minor version) with
     `pip install --target --only-binary=:all:`, drops what the functions never import (the asyncio
     Kubernetes client, console scripts) and precompiles the bytecode; this tree is cached under
     ~/.cache/longshore (or $LONGSHORE_BUNDLE_CACHE), keyed by the requirements, so only the first synth
     downloads anything;
  2. links that tree into the asset directory and copies `functions/longshore` beside it, without the
     command line and the simulation (`cli/`, `sim/`), and precompiles it too.
Bytecode is compiled by an interpreter of the runtime's minor version with `--invalidation-mode
unchecked-hash`: CDK zips assets with fixed 1980 timestamps, so timestamp-checked .pyc files would look
stale on Lambda's read-only filesystem and every cold start would recompile the Kubernetes client in
memory (measured: a cold start took about 1.8 s instead of 0.4 s).

The asset hash is computed up front from the dependency key and our sources, so CDK reuses an existing
`cdk.out/asset.<hash>` without calling the bundler at all when nothing changed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_lambda as lambda_

RUNTIME = lambda_.Runtime.PYTHON_3_11
"""Lambda runtime: CPython 3.11, the interpreter the project is tested on (see docs/deploy.md)."""
RUNTIME_PYTHON = "3.11"
PLATFORM = "manylinux2014_aarch64"
ARCHITECTURE = lambda_.Architecture.ARM_64

CLI_ONLY_DISTRIBUTIONS = frozenset({"click", "rich"})
"""Runtime dependencies that only the `longshore` command line imports."""
EXCLUDED_PACKAGE_DIRS = frozenset({"cli"})
"""Top-level subpackages of `longshore` that never run in Lambda (the command line). The simulation is a
separate package (`longshore_sim`) and never part of the asset."""
EXCLUDED_DEPENDENCY_PATHS = ("kubernetes/aio", "bin")
"""Installed paths the functions never import: the asyncio Kubernetes client (42 MB) and console scripts."""
ASSET_EXCLUDED_DEPENDENCY_PATTERNS = (
    "aiohttp",
    "aiohttp-*.dist-info",
    "aiohappyeyeballs*",
    "aiosignal*",
    "frozenlist*",
    "multidict*",
    "propcache*",
    "yarl*",
    "attr",
    "attrs",
    "attrs-*.dist-info",
    "aws_xray_sdk/ext/aiohttp",
)
"""Paths of the cached dependency tree left out of the asset: aiohttp and the packages only it needs (pulled in
by `kubernetes`' asyncio extra metadata; about 14 MB unpacked), and X-Ray's aiohttp patcher. No function imports
them (`tests/infra/test_bundling.py` checks that importing every handler loads none of them). Applied when the
asset is linked, so the cached tree (and its key) stays valid."""
BUNDLE_FORMAT = "1"
"""Bump when the bundle layout changes, to invalidate cached dependency trees and asset hashes."""

REPO = Path(__file__).resolve().parents[1]
PACKAGE_DIR = REPO / "functions" / "longshore"
PYPROJECT = REPO / "pyproject.toml"


class BundlingError(RuntimeError):
    """The asset could not be built; the message says which step failed and its output."""


def runtime_requirements(pyproject: Path = PYPROJECT) -> tuple[str, ...]:
    """The pinned runtime requirements of the functions, from pyproject.toml."""
    data = tomllib.loads(pyproject.read_text())
    requirements = tuple(data["project"]["dependencies"])
    return tuple(sorted(req for req in requirements if _distribution(req) not in CLI_ONLY_DISTRIBUTIONS))


def _distribution(requirement: str) -> str:
    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if match is None:
        raise BundlingError(f"{PYPROJECT}: [project].dependencies: cannot read requirement {requirement!r}")
    return match.group(1).lower().replace("_", "-")


def default_cache_dir() -> Path:
    configured = os.environ.get("LONGSHORE_BUNDLE_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "longshore" / "lambda-bundles"


@dataclass(frozen=True, slots=True)
class BundleSpec:
    """Everything that decides the bundle's content."""

    package_dir: Path
    requirements: tuple[str, ...]
    python_version: str = RUNTIME_PYTHON
    platform: str = PLATFORM

    def dependency_key(self) -> str:
        text = "\n".join(
            (
                BUNDLE_FORMAT,
                self.python_version,
                self.platform,
                *EXCLUDED_DEPENDENCY_PATHS,
                *self.requirements,
            )
        )
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def asset_key(self) -> str:
        """The dependency key plus what the asset leaves out of the cached tree."""
        return "\n".join((self.dependency_key(), *ASSET_EXCLUDED_DEPENDENCY_PATTERNS))

    def package_files(self) -> list[Path]:
        """Our source files that go into the asset, in a stable order."""
        files: list[Path] = []
        for path in sorted(self.package_dir.rglob("*")):
            relative = path.relative_to(self.package_dir)
            if not path.is_file() or "__pycache__" in relative.parts or path.suffix in (".pyc", ".pyo"):
                continue
            if len(relative.parts) > 1 and relative.parts[0] in EXCLUDED_PACKAGE_DIRS:
                continue
            files.append(path)
        return files

    def fingerprint(self) -> str:
        """The asset hash: changes when a dependency pin, the platform or one of our files changes."""
        digest = hashlib.sha256(self.asset_key().encode())
        for path in self.package_files():
            digest.update(str(path.relative_to(self.package_dir)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
        return digest.hexdigest()


@jsii.implements(cdk.ILocalBundling)
class LocalPythonBundling:
    """`cdk.ILocalBundling` that builds the asset with pip and compileall on this machine."""

    def __init__(self, spec: BundleSpec, cache_dir: Path | None = None) -> None:
        self.spec = spec
        self.cache_dir = cache_dir or default_cache_dir()

    def try_bundle(self, output_dir: str, *, image: cdk.DockerImage | None = None, **options: Any) -> bool:
        del image, options  # the bundle is built here; Docker is never used
        out = Path(output_dir)
        _link_tree(self.dependencies(), out, ignore=_asset_ignore(self.dependencies()))
        target = out / self.spec.package_dir.name
        for source in self.spec.package_files():
            destination = target / source.relative_to(self.spec.package_dir)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
        self._compile(target)
        return True

    def dependencies(self) -> Path:
        """The cached, precompiled dependency tree for this spec (built on first use)."""
        final = self.cache_dir / f"deps-py{self.spec.python_version}-{self.spec.dependency_key()}"
        if final.is_dir():
            return final
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="building-", dir=self.cache_dir))
        try:
            self._pip_install(staging)
            for relative in EXCLUDED_DEPENDENCY_PATHS:
                shutil.rmtree(staging / relative, ignore_errors=True)
            for cache in staging.rglob("__pycache__"):
                shutil.rmtree(cache, ignore_errors=True)
            self._compile(staging)
            try:
                staging.rename(final)
            except OSError:
                if not final.is_dir():  # another synth finished first: use its tree
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return final

    def _pip_install(self, target: Path) -> None:
        command = [
            sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
            "--target", str(target), "--platform", self.spec.platform, "--implementation", "cp",
            "--python-version", self.spec.python_version, "--only-binary=:all:", *self.spec.requirements,
        ]  # fmt: skip
        _run(command, "pip could not install the Lambda dependencies")

    def _compile(self, directory: Path) -> None:
        interpreter = matching_interpreter(self.spec.python_version)
        command = [interpreter, "-m", "compileall", "-q", "-j", "2", "--invalidation-mode", "unchecked-hash"]
        _run([*command, str(directory)], f"compileall failed in {directory}")


def matching_interpreter(version: str) -> str:
    """A Python interpreter of the runtime's minor version, to compile bytecode Lambda can use."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        raise BundlingError(
            f"the Lambda runtime is Python {version} but no python{version} is on PATH to precompile its "
            f"bytecode; install it or run synth with a Python {version} venv"
        )
    return found


def _run(command: list[str], failure: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BundlingError(f"{failure}: {' '.join(command)}\n{result.stdout}{result.stderr}")


def _asset_ignore(root: Path) -> Any:
    """A `shutil.copytree` ignore function that leaves out `ASSET_EXCLUDED_DEPENDENCY_PATTERNS` under `root`."""
    top = [p for p in ASSET_EXCLUDED_DEPENDENCY_PATTERNS if "/" not in p]
    nested = {p for p in ASSET_EXCLUDED_DEPENDENCY_PATTERNS if "/" in p}

    def ignore(directory: str, names: list[str]) -> set[str]:
        relative = Path(directory).relative_to(root)
        if relative == Path("."):
            return {n for n in names if any(fnmatch.fnmatch(n, pattern) for pattern in top)}
        return {n for n in names if (relative / n).as_posix() in nested}

    return ignore


def _link_tree(source: Path, destination: Path, ignore: Any = None) -> None:
    """Copy a tree by hard links (fast, no extra space); fall back to copying across filesystems."""

    def link_or_copy(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(source, destination, dirs_exist_ok=True, copy_function=link_or_copy, ignore=ignore)


def lambda_code(spec: BundleSpec | None = None, cache_dir: Path | None = None) -> lambda_.Code:
    """The one code asset all of the stack's functions share."""
    spec = spec or BundleSpec(package_dir=PACKAGE_DIR, requirements=runtime_requirements())
    return lambda_.Code.from_asset(
        str(spec.package_dir.parent),
        asset_hash_type=cdk.AssetHashType.CUSTOM,
        asset_hash=spec.fingerprint(),
        bundling=cdk.BundlingOptions(
            image=RUNTIME.bundling_image,
            local=LocalPythonBundling(spec, cache_dir),
            command=["false"],  # never reached: local bundling always succeeds or raises
        ),
    )
