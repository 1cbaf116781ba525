"""The errors workflow steps raise; their class names are the Step Functions error names the ASL matches.

Theory of operation: a Lambda task that raises reports `errorType` = the exception's class name, and Step
Functions uses that as the state's error name. The definition (`workflow.definition`) routes on these names:
`Validate` errors end the execution at once (nothing was changed yet, and a taint that is already there
belongs to someone else), errors before `Terminate` go to `Rollback`, `TransientStepError` is retried.
"""

from __future__ import annotations


class StepError(RuntimeError):
    """Base class of every error a workflow step raises on purpose."""


class StepInputError(StepError):
    """The step received a state it cannot read (a bad hand-written input, usually)."""


class NotOwnedError(StepError):
    """The node or instance is not this cluster's: no NodeClaim in the store and no cluster tag."""


class AlreadyDisruptingError(StepError):
    """The node is already being disrupted (it carries the karpenter.sh/disrupted taint)."""


class NodeMismatchError(StepError):
    """The command names a node and an instance that do not belong together."""


class ReplacementFailedError(StepError):
    """The replacement node's claim was forgotten: its launch failed or timed out."""


class ReplacementTimedOutError(StepError):
    """The replacement did not become initialized in time."""


class DrainTimedOutError(StepError):
    """A drain without a deadline did not finish within the bound; nothing was forced."""


class TerminationTimedOutError(StepError):
    """The instance did not reach `terminated` in time."""


class TransientStepError(StepError):
    """Worth retrying (the cluster or AWS was briefly unavailable)."""


#: Errors Step Functions retries on every Lambda task, with backoff. `Lambda.Unknown` is a function whose
#: runtime died without answering (a timeout, an out-of-memory kill) possibly after doing the step's work:
#: every step is idempotent, so repeating it with the same input is safe.
RETRYABLE_ERRORS: tuple[str, ...] = (
    "TransientStepError",
    "ClusterUnavailableError",
    "Lambda.Unknown",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
