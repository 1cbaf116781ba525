"""The pure core: requirements, resources, catalog, scheduling, disruption and interruption decisions.

Standard library and frozen dataclasses only. No I/O, no environment, no wall clock: time arrives as an
argument. import-linter enforces this (see pyproject.toml).
"""
