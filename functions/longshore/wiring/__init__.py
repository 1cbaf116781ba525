"""Composition of the Lambda functions: one `build_*` per function from the production adapters, the per-container
cache that rebuilds when the cluster config changes, and the plumbing from each function's event shape to its
service. The handlers (`longshore.handlers`) are entry points over this package; the simulation builds its
functions through the same `build_*` so it runs what Lambda runs."""
