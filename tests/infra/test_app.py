"""app.py end to end: a bad config fails like `longshore validate`, and the pinned CLI synthesises offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from infra.bundling import PACKAGE_DIR, BundleSpec, LocalPythonBundling, runtime_requirements

from tests.infra.conftest import CDK_CLI, REPO

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

BAD_CLUSTER = """\
apiVersion: longshore.io/v1alpha1
kind: Cluster
metadata:
  name: broken
spec:
  region: us-east-1
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: missing}
      requirement: []
"""


def _offline_env(**extra: str) -> dict[str, str]:
    """No AWS credentials and a dead proxy: any network call fails at once instead of succeeding."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE="/nonexistent",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
        AWS_EC2_METADATA_DISABLED="true",
        HTTPS_PROXY="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        NO_PROXY="",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        CDK_DISABLE_VERSION_CHECK="1",
        CDK_DISABLE_CLI_TELEMETRY="true",
    )
    env.update(extra)
    return env


def _run_app(tmp_path: Path, context: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = _offline_env(CDK_CONTEXT_JSON=json.dumps(context), CDK_OUTDIR=str(tmp_path / "out"))
    return subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_an_invalid_config_fails_synth_with_the_messages_longshore_validate_prints(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    clusters.mkdir()
    config = clusters / "broken.yaml"
    config.write_text(BAD_CLUSTER)
    validate = subprocess.run(
        [sys.executable, "-m", "longshore.cli.main", "validate", str(config)],
        cwd=REPO, env=_offline_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert validate.returncode != 0
    expected = [line.strip() for line in validate.stderr.splitlines() if line.strip()]
    assert any("requirement" in line for line in expected)
    synth = _run_app(tmp_path, {"cluster": "broken", "clustersDir": str(clusters)})
    assert synth.returncode == 1
    assert "cannot synthesise cluster 'broken'" in synth.stderr
    got = [line.strip() for line in synth.stderr.splitlines()]
    assert [line for line in expected if line not in got] == []
    assert not list((tmp_path / "out").glob("*.template.json"))


@pytest.mark.slow
def test_an_unknown_cluster_lists_the_known_ones(tmp_path: Path) -> None:
    result = _run_app(tmp_path, {"cluster": "nope"})
    assert result.returncode == 1
    assert "context 'cluster': 'nope' has no config file" in result.stderr
    assert "demo" in result.stderr


@pytest.mark.slow
def test_pinned_cli_synthesises_the_demo_cluster_offline_with_the_real_bundle(tmp_path: Path) -> None:
    cdk = CDK_CLI / "cdk"
    if not cdk.exists():
        pytest.fail(f"{cdk} is missing: run `make tools`")
    LocalPythonBundling(
        BundleSpec(PACKAGE_DIR, runtime_requirements())
    ).dependencies()  # may download, online
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [str(cdk), "synth", "-c", "cluster=demo", "--no-notices", "--no-version-reporting", "-q", "-o", str(out)],
        cwd=REPO, env=_offline_env(), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    template = json.loads((out / "Longshore-demo.template.json").read_text())
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 5  # provisioner, planner, interruption, steps, trigger
    (asset,) = {f["Metadata"]["aws:asset:path"] for f in functions}  # one shared code asset
    assert (out / asset / "longshore" / "handlers" / "__init__.py").is_file()
    assert (out / asset / "longshore" / "handlers" / "trigger.py").is_file()
    assert (out / asset / "kubernetes" / "client").is_dir()
    assert "AwsSolutions" not in result.stdout + result.stderr.replace("AwsSolutions--", "")
