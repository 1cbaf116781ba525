"""Voluntary disruption decisions: budgets, candidate guards, emptiness, expiry, drift and consolidation.

The planner Lambda snapshots the cluster into plain values, calls `planner.plan(...)`, and hands the
returned commands to the disruption workflow. Nothing in this package acts or reads the clock.
"""
