"""Domain errors: a service's refusal of what a client asked, carrying how it is told.

A service raises its own exception (``SessionNotFound``, ``RunForbidden``, ``ScheduleInvalid``)
and the exception says, as class attributes, the HTTP status it is on the wire, a stable
machine-readable ``error_code`` (the WebSocket's ``error_type``, a schedule run's record) and,
for a refusal that passes, how long to wait (``retry_after``). Every surface reads the same
attributes through ``refusal_of``: the one DRF exception handler (core.api.errors), the
WebSocket consumers' error frames, the scheduler's record of a refused fire. So no surface keeps
a table translating another app's exceptions.

A package that cannot import core (the engine, which imports no Django and no app) has its
refusals declared by the app that runs it (``declare_domain_error``, from ``AppConfig.ready``),
each once with its status and code. Plain Python: no Django.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class DomainError(Exception):
    """A client's request refused by a service: a 4xx, never a 500."""

    status_code: int = 400
    error_code: str = "bad_request"
    retry_after: int | None = None  # seconds: the ``Retry-After`` of a refusal that passes (429)

    @property
    def detail(self) -> str:
        """What the client is told (AgentOS's words); the message unless a class words it otherwise."""
        return str(self)


@dataclass(frozen=True)
class Refusal:
    """A domain error as every surface tells it."""

    status: int
    code: str
    detail: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Declared:
    status: int
    code: str
    retry_after: int | None


_declared: dict[type[Exception], _Declared] = {}


def declare_domain_error(kind: type[Exception], *, status: int, code: str, retry_after: int | None = None) -> None:
    """Declare an exception class that cannot subclass ``DomainError`` (its package cannot import
    core: the engine's) a domain error, told as ``status`` and ``code`` (idempotent)."""
    _declared[kind] = _Declared(status, code, retry_after)


def refusal_of(exc: BaseException) -> Refusal | None:
    """How ``exc`` is told to the client, or None when it is not a domain error (a bug: a 500)."""
    if isinstance(exc, DomainError):
        status, code, detail, retry_after = exc.status_code, exc.error_code, exc.detail, exc.retry_after
    else:
        declared = next((found for kind, found in _declared.items() if isinstance(exc, kind)), None)
        if declared is None:
            return None
        status, code, detail, retry_after = declared.status, declared.code, str(exc), declared.retry_after
    return Refusal(status=status, code=code, detail=detail, headers={"Retry-After": str(retry_after)} if retry_after else {})


def domain_errors() -> tuple[type[Exception], ...]:
    """Every class ``refusal_of`` tells (for an ``except`` clause around a service call)."""
    return (DomainError, *_declared)


__all__ = ["DomainError", "Refusal", "declare_domain_error", "domain_errors", "refusal_of"]
