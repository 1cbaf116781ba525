"""`longshore demo` (interim, until the simulation lands): validate every seed manifest and show the pools.

Theory of operation: the demo runs the real loader on real inputs. It loads the example cluster config
(`clusters/demo.yaml`), then every file of the shared seed manifests `valid/` and `valid-v1/` as its own
cluster, and prints the normalised pools as tables; then it shows that each file of `invalid/` is rejected, with
the errors a user would see. The shared fixtures live next to the repository (`<repo>/../shared`, or
`--shared PATH`). The exit status is 1 if a valid file fails or an invalid one loads.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.rule import Rule

import longshore
from longshore.cli.validate import console, pools_table
from longshore.config import ClusterConfig, ConfigErrors, load_cluster

REPO = Path(longshore.__file__).resolve().parents[2]
DEMO_CLUSTER = REPO / "clusters" / "demo.yaml"


def default_shared() -> Path:
    return REPO.parent / "shared"


def _yaml_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml"))


@click.command()
@click.option(
    "--shared",
    type=click.Path(path_type=Path),
    default=None,
    help="The shared material folder (default: <repo>/../shared).",
)
def command(shared: Path | None) -> None:
    """Validate the example cluster config and every seed manifest, and print the normalised pools."""
    shared = shared or default_shared()
    manifests = shared / "fixtures" / "seed-manifests"
    if not manifests.is_dir():
        raise click.ClickException(
            f"the seed manifests are not at {manifests}; the demo expects the shared folder next to the repository "
            "(<repo>/../shared) or given with --shared PATH"
        )
    out = console()
    problems: list[str] = []

    if DEMO_CLUSTER.is_file():
        out.print(Rule(f"Example cluster config: {DEMO_CLUSTER.relative_to(REPO)}"))
        try:
            config = load_cluster([DEMO_CLUSTER])
            out.print(
                f"cluster [bold]{config.name}[/bold] in {config.region}, Kubernetes {config.kubernetes_version}, "
                f"interruption queue {config.interruption.queue_name or '-'}, "
                f"rebalance {config.interruption.rebalance_default}"
            )
            out.print(pools_table([(None, config)], title="Pools of the example cluster"))
        except ConfigErrors as errors:
            problems.append(str(DEMO_CLUSTER))
            out.print(f"[red]{errors}[/red]", markup=False)

    for folder in ("valid", "valid-v1"):
        directory = manifests / folder
        if not directory.is_dir():
            problems.append(str(directory))
            continue
        out.print(Rule(f"Seed manifests: {folder}/ (each file loaded as its own cluster)"))
        entries: list[tuple[str | None, ClusterConfig]] = []
        for file in _yaml_files(directory):
            try:
                entries.append((file.name, load_cluster([file], cluster_name="demo-cluster")))
            except ConfigErrors as errors:
                problems.append(str(file))
                out.print(str(errors), markup=False, style="red")
        out.print(pools_table(entries, title=f"Normalised pools of {folder}/"))

    invalid = manifests / "invalid"
    if invalid.is_dir():
        out.print(Rule("Seed mistakes: invalid/ (each must be rejected)"))
        for file in _yaml_files(invalid):
            try:
                load_cluster([file])
            except ConfigErrors as errors:
                out.print(f"[green]rejected[/green] {file.name}:")
                for error in errors:
                    out.print(f"    {error}", markup=False, highlight=False)
            else:
                problems.append(f"{file} (loaded, but it should be rejected)")
                out.print(f"[red]accepted by mistake[/red] {file.name}")

    if problems:
        out.print(f"[red]demo failed[/red]: {', '.join(problems)}")
        raise click.exceptions.Exit(1)
    out.print("[green]demo passed[/green]: every valid manifest loads and every invalid one is rejected")
