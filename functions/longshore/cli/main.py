"""The `longshore` command line: one lazily-loaded click command per module in `longshore.cli`.

Theory of operation: `longshore --help` and each command must start fast, so the group imports a command's
module only when that command runs. Each command lives in its own module (`cli/validate.py` defines
`command`), registered by name in `COMMANDS` below.

The simulation's commands live in the separate `longshore_sim` package (`pip install 'longshore[sim]'`), which
the product never imports statically (import-linter forbids it). They are named here by module path only; when
the simulation's dependencies are missing, the command exists but says what to install instead of failing.
"""

from __future__ import annotations

import importlib

import click

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "validate": ("longshore.cli.validate", "Validate cluster configs and Karpenter manifests."),
    "demo": ("longshore_sim.cli.demo", "Run the local end-to-end demo (needs longshore[sim])."),
    "chaos": (
        "longshore_sim.cli.chaos",
        "Randomised whole-system runs on the simulation (needs longshore[sim]).",
    ),
    "sandbox": (
        "longshore_sim.cli.sandbox",
        "A local simulated cluster for kubectl, until Ctrl-C (needs longshore[sim]).",
    ),
    "catalog": ("longshore.cli.catalog", "Show the instance types and offerings each pool may use."),
    "plan": ("longshore.cli.plan", "Plan node claims for pending pods (a dry run of the packing engine)."),
    "simulate": (
        "longshore_sim.cli.simulate",
        "Run a scenario on the simulated cluster (needs longshore[sim]).",
    ),
    "event": ("longshore.cli.event", "Show what Longshore would do with an EventBridge event."),
    "rotate": ("longshore.cli.rotate", "Start a manual node rotation."),
    "explain": ("longshore.cli.explain", "Explain why a node is not disrupted or a pod is pending."),
    "adopt": ("longshore.cli.adopt", "Take over the nodes of a cluster Karpenter ran, replacing none."),
    "status": (
        "longshore.cli.status",
        "What Longshore would launch, disrupt and save in a live cluster (read-only).",
    ),
}


class LazyGroup(click.Group):
    """A click group that imports each subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, _ = COMMANDS[cmd_name]
        try:
            command = importlib.import_module(module_name).command
        except ModuleNotFoundError as missing:
            return _needs_extra(cmd_name, module_name, missing)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _needs_extra(name: str, module_name: str, missing: ModuleNotFoundError) -> click.Command:
    """A stand-in for a command whose optional dependencies are not installed: it says what to install."""
    if not module_name.startswith("longshore_sim") and missing.name and missing.name.startswith("longshore"):
        raise missing
    extra = "sim" if module_name.startswith("longshore_sim") else "all"

    @click.command(name=name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    def unavailable() -> None:
        raise click.ClickException(
            f"`longshore {name}` needs the simulation, which is not installed (missing module "
            f"{missing.name!r}): pip install 'longshore[{extra}]'"
        )

    return unavailable


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="longshore")
def main() -> None:
    """Longshore: a serverless, Karpenter-compatible node autoscaler for Amazon EKS."""


if __name__ == "__main__":
    main()
