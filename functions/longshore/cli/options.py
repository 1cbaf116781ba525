"""Command-line options every command that reads a cluster configuration shares, and how they load it.

Theory of operation: `@config_options` adds `--config/-c PATH` (repeatable: a cluster config file, plain
Karpenter manifest files, or directories of them), `--region` and `--cluster-name` (used when the files hold no
Cluster document; defaults us-east-1 and demo). The command passes those three values to `load_from_options`,
which returns the `ClusterConfig` or prints every configuration error (file:line: Kind/name: field: message)
on stderr and exits with status 2, so each command only deals with a valid model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from longshore.config import (
    DEFAULT_CLUSTER_NAME,
    DEFAULT_REGION,
    ClusterConfig,
    ConfigErrors,
    load_cluster,
)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

CONFIG_ERROR_EXIT_CODE = 2


def read_answer_file(load: Callable[[Path], T], path: Path, what: str) -> T:
    """`load(path)` (a saved EC2 answer, `adapters.aws.answer_file`), or every problem of the file on stderr
    and exit with status 2, as a configuration error does."""
    from longshore.adapters.aws.answer_file import AnswerFileError

    try:
        return load(path)
    except AnswerFileError as error:
        click.secho(f"{len(error.problems)} error(s) in the {what} file", fg="red", err=True)
        for problem in error.problems:
            click.echo(f"  {problem}", err=True)
        raise click.exceptions.Exit(CONFIG_ERROR_EXIT_CODE) from None


def region_option(func: F) -> F:
    return click.option(
        "--region",
        default=DEFAULT_REGION,
        show_default=True,
        help="AWS region, when the files hold no Cluster document.",
    )(func)


def cluster_name_option(func: F) -> F:
    return click.option(
        "--cluster-name",
        default=DEFAULT_CLUSTER_NAME,
        show_default=True,
        help="EKS cluster name, when the files hold no Cluster document.",
    )(func)


def config_options(func: F) -> F:
    """Add `--config` (repeatable), `--region` and `--cluster-name` to a click command.

    The command receives them as the keyword arguments `config_paths`, `region` and `cluster_name`.
    """
    func = cluster_name_option(region_option(func))
    return click.option(
        "--config",
        "-c",
        "config_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="A cluster config file, or Karpenter manifest files / directories (repeatable).",
    )(func)


def print_config_errors(errors: ConfigErrors) -> None:
    """Every error on stderr, one per line, in the compiler-like `file:line: Kind/name: field: message` form."""
    click.secho(errors.summary().splitlines()[0], fg="red", bold=True, err=True)
    for error in errors:
        click.echo(f"  {error}", err=True)


def load_from_options(
    config_paths: Sequence[Path | str],
    region: str,
    cluster_name: str,
    *,
    kubernetes_version: str | None = None,
) -> ClusterConfig:
    """The cluster the options describe; on configuration errors print them all and exit with status 2."""
    if not config_paths:
        raise click.UsageError(
            "give the configuration with --config FILE (a cluster config or Karpenter manifests)"
        )
    try:
        if kubernetes_version is None:
            return load_cluster(config_paths, region=region, cluster_name=cluster_name)
        return load_cluster(
            config_paths, region=region, cluster_name=cluster_name, kubernetes_version=kubernetes_version
        )
    except ConfigErrors as errors:
        print_config_errors(errors)
        raise click.exceptions.Exit(CONFIG_ERROR_EXIT_CODE) from None
