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
