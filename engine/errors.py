"""Exceptions the runtime raises or hands to its callers.

Model failures never escape a run's iteration: the run ends with a ``RunError`` event instead.
They are exceptions here so that providers, the fallback chain and the run loop can classify them.
"""
from __future__ import annotations


class ModelError(Exception):
    """A model provider call failed.

    ``provider`` is the display name ("OpenAI"), ``status_code`` the HTTP status when there was one.
    """

    error_type = "model_provider_error"

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status_code = status_code


class RetryableModelError(ModelError):
    """Worth retrying or falling back: timeouts, connection errors, 5xx, 429 rate limits."""


class FatalModelError(ModelError):
    """Retrying cannot help: bad key (401), bad request (400), unknown model (404) ..."""


class MissingCredentialsError(FatalModelError):
    """The provider's API key is not configured; the message names the environment variable."""


class InvalidContinuation(ValueError):
    """``continue_run`` got decisions that do not fit the paused run (the API maps this to 400)."""


class OutputSchemaError(ValueError):
    """The model's answer did not parse as the requested structured output."""

    error_type = "output_schema_error"


class CheckTrigger:
    """Why a guardrail refused (Agno's ``CheckTrigger`` values, the events' ``error_id``)."""

    INPUT_NOT_ALLOWED = "input_not_allowed"
    OUTPUT_NOT_ALLOWED = "output_not_allowed"
    PROMPT_INJECTION = "prompt_injection"
    PII_DETECTED = "pii_detected"


class InputCheckError(Exception):
    """A pre-hook (a guardrail) refused the run's input: the run ends with a ``RunError`` whose
    ``error_type`` is ``input_check_error`` and ``error_id`` the trigger, as Agno's."""

    error_type = "input_check_error"

    def __init__(self, message: str, *, check_trigger: str = CheckTrigger.INPUT_NOT_ALLOWED, additional_data: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.check_trigger = check_trigger
        self.additional_data = additional_data


class OutputCheckError(InputCheckError):
    """A post-hook refused the answer: the run ends with a ``RunError`` instead of the answer."""

    error_type = "output_check_error"

    def __init__(self, message: str, *, check_trigger: str = CheckTrigger.OUTPUT_NOT_ALLOWED, additional_data: dict | None = None) -> None:
        super().__init__(message, check_trigger=check_trigger, additional_data=additional_data)


class TokenBudgetExceeded(Exception):
    """The run spent its ``token_budget`` and the model still wanted to go on (call more tools)."""

    error_type = "token_budget_exceeded"

    def __init__(self, budget: int, spent: int) -> None:
        self.message = f"Token budget exhausted: this run used {spent} tokens of its budget of {budget}, and was stopped before calling the model again."
        super().__init__(self.message)
