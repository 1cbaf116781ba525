"""API errors as the Kubernetes API server reports them: an HTTP code plus a `v1 Status` object.

Theory of operation: everything below the HTTP layer raises `ApiError`; the server turns it into the
response status line and a `Status` body (`kind: Status`, `status: Failure`, `reason`, `message`, `details`,
`code`), which is what the kubernetes client parses into `ApiException`. The constructors mirror
`k8s.io/apimachinery/pkg/api/errors` (NewNotFound, NewAlreadyExists, NewConflict, NewTooManyRequests...) and
use the same message wording, because callers (and people reading logs) match on it.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the API server answers with a Status object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(resource: str, name: str, group: str = "", **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    details.update(extra)
    return details


def qualified(resource: str, group: str) -> str:
    """`pods`, `deployments.apps`: the resource name as error messages print it."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        details=_details(resource, name, group),
    )


def route_not_found() -> ApiError:
    return ApiError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        details=_details(resource, name, group),
    )


def conflict(resource: str, name: str, group: str = "", why: str = "") -> ApiError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        details=_details(resource, name, group),
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(resource: str, kind: str, name: str, causes: list[tuple[str, str]], group: str = "") -> ApiError:
    """422 Invalid: `causes` are (field path, message) pairs, as field validation reports them."""
    summary = ", ".join(f"{field}: {message}" for field, message in causes)
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {summary}',
        details=_details(
            resource,
            name,
            group,
            causes=[{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes],
        ),
    )


def too_many_requests(
    message: str, causes: list[dict[str, str]] | None = None, retry_after: int = 0
) -> ApiError:
    details: dict[str, Any] = {"retryAfterSeconds": retry_after} if retry_after else {}
    if causes:
        details["causes"] = causes
    return ApiError(429, "TooManyRequests", message, details=details or None, retry_after=retry_after or None)


def forbidden(resource: str, name: str, why: str, group: str = "") -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'{qualified(resource, group)} "{name}" is forbidden: {why}',
        details=_details(resource, name, group),
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(verb: str, resource: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({verb} {resource})",
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")
