"""`ports.karpenter.KarpenterObjects` on the `kubernetes` client's CustomObjectsApi.

Reads ask for the raw response (`_preload_content=False`) like `adapters.kube.cluster`; a 404 on a list means
the CRD is not installed and reads as no objects. Writes are JSON merge patches (`application/merge-patch+json`,
which custom resources accept), status through the `status` subresource. Every call goes through
`call_with_retries` (5xx, throttling, timeouts).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from longshore.adapters.kube.retry import CallBudget, RetryPolicy, call_with_retries
from longshore.ports.karpenter import Kind

ROUTES: Final[dict[str, tuple[str, str, str]]] = {
    "NodePool": ("karpenter.sh", "v1", "nodepools"),
    "NodeClaim": ("karpenter.sh", "v1", "nodeclaims"),
    "EC2NodeClass": ("karpenter.k8s.aws", "v1", "ec2nodeclasses"),
    "NodeOverlay": (
        "karpenter.sh",
        "v1alpha1",
        "nodeoverlays",
    ),  # read only; absent (404) where not installed
}
PERMISSIONS: Final[dict[str, frozenset[tuple[str, str, str]]]] = {
    # method -> the RBAC permissions (api group, resource, verb) it needs; deploy/clusterrole.yaml grants each
    # function those of the methods its code names (tests/infra/test_clusterrole.py)
    "list_objects": frozenset(
        {
            ("karpenter.sh", "nodepools", "list"),
            ("karpenter.sh", "nodeclaims", "list"),
            ("karpenter.sh", "nodeoverlays", "list"),
            ("karpenter.k8s.aws", "ec2nodeclasses", "list"),
        }
    ),
    "write_status": frozenset(
        {
            ("karpenter.sh", "nodepools/status", "patch"),
            ("karpenter.sh", "nodeclaims/status", "patch"),
            ("karpenter.k8s.aws", "ec2nodeclasses/status", "patch"),
        }
    ),
    "apply": frozenset(
        {
            ("karpenter.sh", "nodeclaims", "create"),
            ("karpenter.sh", "nodeclaims", "patch"),
            ("karpenter.sh", "nodeclaims/status", "patch"),
        }
    ),
    "release_object": frozenset(
        {("karpenter.sh", "nodeclaims", "patch"), ("karpenter.sh", "nodeclaims", "delete")}
    ),
}
MERGE_PATCH: Final = "application/merge-patch+json"
REQUEST_TIMEOUT: Final = (5.0, 30.0)


class KubeKarpenterObjects:
    """Karpenter's custom resources through the Kubernetes API (see the module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        budget: CallBudget | None = None,
    ) -> None:
        self._api = k8s.CustomObjectsApi(api_client)
        self._client = api_client
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._budget = budget  # the invocation's time for Kubernetes calls (`retry.CallBudget`)

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        timeout = kwargs.pop("_request_timeout", REQUEST_TIMEOUT)
        budget = self._budget

        def attempt() -> Any:
            return fn(*args, _request_timeout=budget.timeout(timeout) if budget else timeout, **kwargs)

        return call_with_retries(attempt, self._retry, self._sleep, what, budget=budget)

    def list_objects(self, kind: Kind) -> tuple[dict[str, Any], ...]:
        group, version, plural = ROUTES[kind]
        try:
            response = self._call(
                f"list {plural}",
                self._api.list_cluster_custom_object,
                group,
                version,
                plural,
                _preload_content=False,
            )
        except ApiException as error:
            if error.status == 404:
                return ()
            raise
        data = response.data
        parsed = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
        return tuple(item for item in parsed.get("items") or () if isinstance(item, dict))

    def _patch(self, kind: Kind, name: str, body: Mapping[str, Any], *, status: bool) -> None:
        group, version, plural = ROUTES[kind]
        path = f"/apis/{group}/{version}/{plural}/{name}" + ("/status" if status else "")
        try:
            self._call(
                f"patch {plural}/{name}",
                self._client.call_api,
                path,
                "PATCH",
                header_params={"Content-Type": MERGE_PATCH, "Accept": "application/json"},
                body=dict(body),
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
        except ApiException as error:
            if error.status != 404:
                raise

    def write_status(self, kind: Kind, name: str, status: Mapping[str, Any]) -> None:
        self._patch(kind, name, {"status": dict(status)}, status=True)

    def apply(self, kind: Kind, obj: Mapping[str, Any]) -> None:
        group, version, plural = ROUTES[kind]
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        body = {k: v for k, v in obj.items() if k != "status"}
        try:
            self._call(
                f"create {plural}/{name}",
                self._api.create_cluster_custom_object,
                group,
                version,
                plural,
                body,
            )
        except ApiException as error:
            if error.status != 409:
                raise
            patch = {"metadata": {k: meta[k] for k in ("labels", "annotations", "finalizers") if k in meta}}
            if "spec" in obj:
                patch["spec"] = obj["spec"]
            self._patch(kind, name, patch, status=False)
        if "status" in obj:
            self.write_status(kind, name, obj["status"])

    def release_object(self, kind: Kind, name: str) -> None:
        group, version, plural = ROUTES[kind]
        self._patch(kind, name, {"metadata": {"finalizers": None}}, status=False)
        try:
            self._call(
                f"delete {plural}/{name}",
                self._api.delete_cluster_custom_object,
                group,
                version,
                plural,
                name,
            )
        except ApiException as error:
            if error.status != 404:
                raise
