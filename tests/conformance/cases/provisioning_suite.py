"""Placeholder; filled below."""

CASES: list[object] = []
