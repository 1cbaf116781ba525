"""Cluster access: DescribeCluster, the aws-iam-authenticator token, its refresh, and the configured ApiClient.

Matrix: endpoint/CA/version/CIDR read from moto's EKS; token shape (prefix, base64url without padding, a
presigned GetCallerIdentity URL valid 60 s with the cluster header signed); the token is re-signed only once
it is close to expiry on the injected clock; the ApiClient sends `Authorization: Bearer <token>` to the API
server (a loopback HTTP server records it) and switches to the refreshed token without being rebuilt.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client as k8s

from longshore.adapters.aws.eks import (
    REFRESH_MARGIN_S,
    TOKEN_LIFETIME_S,
    TOKEN_PREFIX,
    TokenSource,
    api_client,
    decode_token,
    describe_cluster,
    presigned_token,
)
from longshore_sim.clock import VirtualClock
from tests.adapters.conftest import CLUSTER, World


@pytest.mark.slow
def test_describe_cluster_reads_endpoint_ca_version_and_cidr(shared_world: World) -> None:
    world = shared_world
    info = describe_cluster(world.session.client("eks"), CLUSTER)
    assert info.endpoint == world.seeded.endpoint and info.endpoint.startswith("https://")
    assert info.ca_data == world.seeded.ca_data
    assert (info.version, info.service_cidr, info.dns_ip) == ("1.30", "10.100.0.0/16", "10.100.0.10")


def test_token_is_a_presigned_get_caller_identity_url_for_the_cluster(shared_world: World) -> None:
    world = shared_world
    token = presigned_token(world.session.client("sts"), CLUSTER)
    assert token.startswith(TOKEN_PREFIX) and not token.endswith("=")
    url = urllib.parse.urlparse(decode_token(token))
    query = urllib.parse.parse_qs(url.query)
    assert url.netloc.startswith("sts.") and url.netloc.endswith(".amazonaws.com")
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Signature"][0]


def test_signing_does_not_leave_the_header_hook_on_the_client(shared_world: World) -> None:
    world = shared_world
    sts = world.session.client("sts")
    presigned_token(sts, "one")
    url = urllib.parse.urlparse(decode_token(presigned_token(sts, "two")))
    assert urllib.parse.parse_qs(url.query)["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]


def test_token_is_refreshed_only_close_to_expiry() -> None:
    clock = VirtualClock(1000.0)
    signed: list[int] = []

    def sign() -> str:
        signed.append(1)
        return f"{TOKEN_PREFIX}{len(signed)}"

    source = TokenSource(sign, clock.now)
    first = source.token()
    clock.advance(TOKEN_LIFETIME_S - REFRESH_MARGIN_S - 1)
    assert source.token() == first and len(signed) == 1
    clock.advance(1)
    assert source.token() != first and len(signed) == 2


@pytest.fixture
def api_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that answers GET /api/v1/namespaces and records Authorization headers."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            body = json.dumps(
                {"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": []}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_api_client_sends_a_presigned_token(shared_world: World, api_server: tuple[str, list[str]]) -> None:
    world = shared_world
    url, seen = api_server
    tokens = TokenSource.for_cluster(world.session.client("sts"), CLUSTER, VirtualClock(1000.0).now)
    client = api_client(describe_cluster(world.session.client("eks"), CLUSTER), tokens, endpoint=url)
    k8s.CoreV1Api(client).list_namespace()
    assert client.configuration.host == url
    [header] = seen
    assert header.startswith(f"Bearer {TOKEN_PREFIX}")
    assert decode_token(header.removeprefix("Bearer ")).startswith("https://sts.")


def test_api_client_follows_token_refreshes_without_being_rebuilt(
    shared_world: World, api_server: tuple[str, list[str]]
) -> None:
    world = shared_world
    url, seen = api_server
    clock = VirtualClock(1000.0)
    signed: list[str] = []

    def sign() -> str:
        signed.append(f"{TOKEN_PREFIX}{len(signed) + 1}")
        return signed[-1]

    client = api_client(
        describe_cluster(world.session.client("eks"), CLUSTER), TokenSource(sign, clock.now), endpoint=url
    )
    core = k8s.CoreV1Api(client)
    core.list_namespace()
    core.list_namespace()
    clock.advance(TOKEN_LIFETIME_S)  # past the refresh point
    core.list_namespace()
    assert seen == [f"Bearer {TOKEN_PREFIX}1", f"Bearer {TOKEN_PREFIX}1", f"Bearer {TOKEN_PREFIX}2"]
