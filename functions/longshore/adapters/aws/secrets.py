"""`ports.triggers.WebhookSecret` on AWS Secrets Manager, cached per container.

Theory of operation: the stack generates the webhook secret at deploy time (`infra/webhook.py`); the trigger
function reads it with `GetSecretValue` on the first request of a container and again only after `ttl_s`
(default 300 s), so a flood of requests, authenticated or not, costs one Secrets Manager call per container
per period. A rotated secret is therefore picked up by warm containers within `ttl_s` (docs/security.md,
"Rotating the webhook secret").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

DEFAULT_TTL_S: Final = 300.0


class CachedSecret:
    def __init__(
        self, client: Any, secret_id: str, now: Callable[[], float], ttl_s: float = DEFAULT_TTL_S
    ) -> None:
        self._client = client
        self._secret_id = secret_id
        self._now = now
        self._ttl_s = ttl_s
        self._value: str | None = None
        self._expires = 0.0

    def current(self) -> str:
        now = self._now()
        if self._value is None or now >= self._expires:
            response = self._client.get_secret_value(SecretId=self._secret_id)
            value = response.get("SecretString")
            if not isinstance(value, str) or not value:
                raise ValueError(f"secret {self._secret_id}: SecretString is empty or missing")
            self._value, self._expires = value, now + self._ttl_s
        return self._value
