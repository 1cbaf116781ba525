"""The `longshore` command line: one lazily-loaded click command per module in `longshore.cli`.

Theory of operation: `longshore --help` and each command must start fast, so the group imports a command's
module only when that command runs. Each command lives in its own module (`cli/validate.py` defines
`command`), registered by name in `COMMANDS` below.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "validate": ("longshore.cli.validate", "Validate cluster configs and Karpenter manifests."),
    "demo": ("longshore.cli.demo", "Run the local end-to-end demo."),
    "catalog": ("longshore.cli.catalog", "Show the instance types and offerings each pool may use."),
    "plan": ("longshore.cli.plan", "Plan node claims for pending pods (a dry run of the packing engine)."),
    "simulate": ("longshore.cli.simulate", "Run a scenario on the simulated cluster and write a report."),
    "event": ("longshore.cli.event", "Show what Longshore would do with an EventBridge event."),
    "rotate": ("longshore.cli.rotate", "Start a manual node rotation."),
    "explain": ("longshore.cli.explain", "Explain why a node is not disrupted or a pod is pending."),
}


class LazyGroup(click.Group):
    """A click group that imports each subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [
            name for name, (module, _) in COMMANDS.items() if importlib.util.find_spec(module) is not None
        ]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, _ = COMMANDS[cmd_name]
        if importlib.util.find_spec(module_name) is None:
            return None
        command = importlib.import_module(module_name).command
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="longshore")
def main() -> None:
    """Longshore: a serverless, Karpenter-compatible node autoscaler for Amazon EKS."""


if __name__ == "__main__":
    main()
