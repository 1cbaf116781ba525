"""Cluster access: the EKS endpoint and CA, an IAM bearer token, and a configured `kubernetes` ApiClient.

Theory of operation: `describe_cluster` reads the endpoint, CA bundle, Kubernetes version and service CIDR
from `eks:DescribeCluster`. The bearer token is the aws-iam-authenticator format: a presigned STS
`GetCallerIdentity` URL (60 s, with the `x-k8s-aws-id: <cluster>` header signed in) encoded as
`k8s-aws-v1.` + base64url without padding. EKS accepts such a token for 15 min after signing; `TokenSource`
keeps one and re-signs it `REFRESH_MARGIN_S` before `TOKEN_LIFETIME_S` runs out, judged on an injected clock.
`api_client` returns a `kubernetes.client.ApiClient` whose configuration asks the `TokenSource` on every
request (`refresh_api_key_hook`), so a long-running handler never sends an expired token. The kubernetes
package is imported inside `api_client` only, to keep it off the import path of code that does not talk to
the API server.
"""

from __future__ import annotations

import base64
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from longshore.adapters.aws.userdata import ClusterInfo

TOKEN_PREFIX: Final = "k8s-aws-v1."
PRESIGN_EXPIRES_S: Final = 60
TOKEN_LIFETIME_S: Final = 14 * 60.0  # EKS honours a token for 15 min; kubectl's exec plugin says 14
REFRESH_MARGIN_S: Final = 60.0
CLUSTER_ID_HEADER: Final = "x-k8s-aws-id"
_API_KEY_NAMES: Final = ("BearerToken", "authorization")


def describe_cluster(eks: Any, name: str) -> ClusterInfo:
    """Endpoint, CA, version and service CIDR of EKS cluster `name`."""
    cluster = eks.describe_cluster(name=name)["cluster"]
    network = cluster.get("kubernetesNetworkConfig") or {}
    return ClusterInfo(
        name=name,
        endpoint=str(cluster["endpoint"]).rstrip("/"),
        ca_data=str((cluster.get("certificateAuthority") or {}).get("data", "")),
        version=str(cluster.get("version", "")),
        service_cidr=str(network.get("serviceIpv4Cidr") or "10.100.0.0/16"),
        ip_family=str(network.get("ipFamily") or "ipv4"),
    )


def presigned_token(sts: Any, cluster_name: str) -> str:
    """An aws-iam-authenticator bearer token for `cluster_name`, signed with `sts`'s credentials."""

    def add_cluster_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    sts.meta.events.register(event, add_cluster_header, unique_id=f"longshore-eks-token-{id(sts)}")
    try:
        url = sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=PRESIGN_EXPIRES_S, HttpMethod="GET"
        )
    finally:
        sts.meta.events.unregister(event, unique_id=f"longshore-eks-token-{id(sts)}")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(str(url).encode()).decode().rstrip("=")


def decode_token(token: str) -> str:
    """The presigned URL inside a token (for tests and for an API server emulator that wants to check it)."""
    if not token.startswith(TOKEN_PREFIX):
        raise ValueError(f"bearer token does not start with {TOKEN_PREFIX!r}")
    body = token[len(TOKEN_PREFIX) :]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    issued_at: float

    def fresh(self, now: float) -> bool:
        return now < self.issued_at + TOKEN_LIFETIME_S - REFRESH_MARGIN_S


class TokenSource:
    """Hands out a bearer token, re-signing it shortly before it expires (thread-safe)."""

    def __init__(self, sign: Callable[[], str], now: Callable[[], float]) -> None:
        self._sign = sign
        self._now = now
        self._issued: IssuedToken | None = None
        self._lock = threading.Lock()

    @staticmethod
    def for_cluster(sts: Any, cluster_name: str, now: Callable[[], float]) -> TokenSource:
        return TokenSource(lambda: presigned_token(sts, cluster_name), now)

    def token(self) -> str:
        with self._lock:
            now = self._now()
            if self._issued is None or not self._issued.fresh(now):
                self._issued = IssuedToken(self._sign(), now)
            return self._issued.token


def _ca_file(ca_data: str) -> str:
    """Write the base64 CA bundle to a private temporary file (the kubernetes client wants a path)."""
    handle, path = tempfile.mkstemp(prefix="longshore-ca-", suffix=".crt")
    with os.fdopen(handle, "wb") as out:
        out.write(base64.b64decode(ca_data))
    return path


def api_client(cluster: ClusterInfo, tokens: TokenSource, endpoint: str | None = None) -> Any:
    """A `kubernetes.client.ApiClient` for the cluster, authenticating with `tokens` on every request.

    `endpoint` overrides the cluster's endpoint (the simulation points it at its loopback API server). TLS is
    verified against the cluster's CA for https endpoints; plain http (loopback emulator only) has no TLS.
    """
    from kubernetes import client as k8s  # imported here: keep kubernetes off other code's cold path

    config = k8s.Configuration()
    config.host = (endpoint or cluster.endpoint).rstrip("/")
    if config.host.startswith("https://") and cluster.ca_data:
        try:
            config.ssl_ca_cert = _ca_file(cluster.ca_data)
        except ValueError:
            config.verify_ssl = True
    # kubernetes 36 looks the key up as "BearerToken" (alias "authorization") and the prefix by "BearerToken";
    # older clients use "authorization" for both. Set both so the header is `Bearer <token>` either way.
    config.api_key = dict.fromkeys(_API_KEY_NAMES, tokens.token())
    config.api_key_prefix = dict.fromkeys(_API_KEY_NAMES, "Bearer")

    def refresh(conf: Any) -> None:
        token = tokens.token()
        for name in _API_KEY_NAMES:
            conf.api_key[name] = token

    config.refresh_api_key_hook = refresh
    # One retry layer: `adapters/kube/retry.py` retries with backoff on the injected clock. urllib3's own
    # default (3 retries, sleeping a 429/503's `Retry-After` in real time) would sleep outside that policy.
    config.retries = False
    return k8s.ApiClient(configuration=config)
