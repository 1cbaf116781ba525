"""Ports: narrow `typing.Protocol`s that services depend on and adapters implement.

One module per concern (clock, cloud, kube, store, workflow), so each stays small and each adapter
implements only what it needs. Ports speak in core types; they never expose boto3 or kubernetes objects.
"""
