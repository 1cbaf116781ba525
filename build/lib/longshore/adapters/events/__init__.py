"""EventBridge interruption events: pydantic models of the payloads AWS sends, and their parsing."""
