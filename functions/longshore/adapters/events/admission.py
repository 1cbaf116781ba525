"""The admission webhook's wire formats: a Lambda function URL request carrying a Kubernetes `AdmissionReview`,
and the response the API server expects.

Theory of operation: the API server POSTs an `admission.k8s.io/v1` `AdmissionReview` to the trigger
function's URL; Lambda hands the function the HTTP request as a function URL event (payload format 2.0:
`body`, `isBase64Encoded`, `requestContext.http.method`). `parse_admission` validates both layers with
pydantic and raises `MalformedAdmissionError` naming the field and the value, so a stray request gets a clear
400 and a log line instead of a stack trace. `admission_response` always allows: the webhook only observes
(`failurePolicy: Ignore` in `deploy/webhook.yaml` covers the cases where it cannot answer at all).
`function_url_event` builds the request as Lambda would, for tests and the simulation.

The URL's path carries the per-cluster webhook secret (`https://<id>.lambda-url.<region>.on.aws/<secret>`):
`path_matches_secret` compares the request's `rawPath` with it in constant time and is total (any event, any
type, gives True or False), so an unauthenticated request is refused with `forbidden_response` before
anything in it is parsed.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

API_VERSION: Final = "admission.k8s.io/v1"
_MAX_VALUE_CHARS: Final = 80
_Model = TypeVar("_Model", bound="BaseModel")


class MalformedAdmissionError(ValueError):
    """The request is not a function URL POST carrying a valid AdmissionReview."""


class _Http(BaseModel):
    model_config = ConfigDict(extra="ignore")
    method: str


class _RequestContext(BaseModel):
    model_config = ConfigDict(extra="ignore")
    http: _Http


class FunctionUrlRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    body: str | None = None
    is_base64_encoded: bool = Field(default=False, alias="isBase64Encoded")
    request_context: _RequestContext = Field(alias="requestContext")


class GroupVersionKind(BaseModel):
    model_config = ConfigDict(extra="ignore")
    group: str = ""
    version: str
    kind: str


class AdmissionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    uid: str = Field(min_length=1)
    kind: GroupVersionKind
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    name: str = ""
    namespace: str = ""
    sub_resource: str = Field(default="", alias="subResource")
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = Field(default=None, alias="oldObject")
    dry_run: bool = Field(default=False, alias="dryRun")

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class AdmissionReview(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    api_version: Literal["admission.k8s.io/v1"] = Field(alias="apiVersion")
    kind: Literal["AdmissionReview"]
    request: AdmissionRequest


def parse_admission(event: Any) -> AdmissionReview:
    """The AdmissionReview inside a function URL event."""
    http = _validate(FunctionUrlRequest, event, "the function URL event")
    if http.request_context.http.method != "POST":
        raise MalformedAdmissionError(
            f"requestContext.http.method: expected POST, got {_show(http.request_context.http.method)}"
        )
    if not http.body:
        raise MalformedAdmissionError("body: expected an AdmissionReview, got an empty body")
    text: str | bytes = http.body
    if http.is_base64_encoded:
        try:
            text = base64.b64decode(http.body, validate=True)
        except (binascii.Error, ValueError) as error:
            raise MalformedAdmissionError(f"body: not valid base64 ({error})") from None
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise MalformedAdmissionError(f"body: not JSON ({error.__class__.__name__}: {error})") from None
    return _validate(AdmissionReview, document, "the AdmissionReview")


def admission_response(uid: str, status: int = 200) -> dict[str, Any]:
    """The function URL response: an AdmissionReview that allows the request."""
    review = {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(review)}


def error_response(message: str, status: int = 400) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps({"error": message}),
    }


def forbidden_response() -> dict[str, Any]:
    """403 for a request whose path does not carry the secret (says nothing about what was expected)."""
    return error_response("forbidden", 403)


def path_matches_secret(event: Any, secret: str) -> bool:
    """True when the event's `rawPath` is exactly `/<secret>`, compared in constant time."""
    path = event.get("rawPath") if isinstance(event, dict) else None
    if not isinstance(path, str) or not secret:
        return False
    presented = path.encode("utf-8", "surrogatepass")
    return hmac.compare_digest(presented, f"/{secret}".encode())


def function_url_event(
    review: dict[str, Any], *, base64_body: bool = False, secret: str = ""
) -> dict[str, Any]:
    """`review` as Lambda hands a function URL POST to the function (payload format 2.0), sent to `/<secret>`."""
    body = json.dumps(review)
    return {
        "version": "2.0",
        "rawPath": f"/{secret}",
        "headers": {"content-type": "application/json"},
        "requestContext": {"http": {"method": "POST", "path": f"/{secret}"}},
        "body": base64.b64encode(body.encode()).decode() if base64_body else body,
        "isBase64Encoded": base64_body,
    }


def admission_review(
    uid: str, operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An AdmissionReview for a pod, as the API server sends it."""
    pod = obj if obj is not None else old or {}
    meta = pod.get("metadata") or {}
    return {
        "apiVersion": API_VERSION,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": operation,
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "object": obj,
            "oldObject": old,
        },
    }


def _validate(model: type[_Model], document: Any, what: str) -> _Model:
    try:
        return model.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise MalformedAdmissionError(
            f"{what}: {where}: {first['msg']} (got {_show(first.get('input'))})"
        ) from None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."
