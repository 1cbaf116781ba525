"""The simulation's commands, loaded by `longshore` only when `longshore[sim]` is installed."""
