"""Lambda handlers: one module per function. Each parses its event, wires adapters, calls one service."""
