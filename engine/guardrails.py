"""Guardrails: pre-hooks that read the run's input and refuse it (``InputCheckError``) or change it.

Shipped: ``PIIDetectionGuardrail`` (emails, phone numbers, payment card numbers that pass the Luhn
check, US social security and UK national insurance numbers; refuses, or masks them with
``mask_pii=True``), ``PromptInjectionGuardrail`` (the phrasings of the common jailbreaks) and
``OpenAIModerationGuardrail`` (OpenAI's moderation endpoint; it needs ``OPENAI_API_KEY``).

``GUARDRAILS`` names them for configurations that are not code (the admin's agent definition):
``guardrail_by_name("pii_mask")`` builds one.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import CheckTrigger, InputCheckError

if TYPE_CHECKING:
    from engine.hooks import RunInput

logger = logging.getLogger(__name__)


class Guardrail:
    """A check of the run's input. Subclasses set ``name`` and implement ``check`` (or ``acheck``
    when the check waits on the network); either raises ``InputCheckError`` to refuse."""

    name = "guardrail"

    def check(self, run_input: RunInput) -> None:
        raise NotImplementedError

    async def acheck(self, run_input: RunInput) -> None:
        self.check(run_input)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


# ---- personal data ------------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    """The checksum every payment card number carries: it tells a card from any long number."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> bool:
    digits = re.sub(r"\D", "", match.group(0))
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def _phone(match: re.Match[str]) -> bool:
    # Nine digits at least (eight with a country code): a date (2024-01-15) or a year range is not a phone.
    digits = len(re.sub(r"\D", "", match.group(0)))
    return (8 if match.group(0).startswith("+") else 9) <= digits <= 15


# (kind, pattern, extra test of a match). Order matters: cards and national ids are found before
# phone numbers, whose looser pattern would otherwise claim their digits.
PII_KINDS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], bool] | None], ...] = (
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), None),
    ("card_number", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _card),
    ("national_id", re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])"), None),  # US SSN
    ("national_id", re.compile(r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"), None),  # UK NINO
    ("phone", re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}(?!\w)"), _phone),
)


def find_pii(text: str, kinds: Iterable[str] | None = None) -> tuple[list[str], str]:
    """(the kinds of personal data in ``text``, in the order checked; ``text`` with each found
    value replaced by ``[kind]``). ``kinds`` limits what is looked for."""
    wanted = set(kinds) if kinds is not None else None
    found: list[str] = []
    for kind, pattern, accept in PII_KINDS:
        if wanted is not None and kind not in wanted:
            continue

        def mask(match: re.Match[str], kind: str = kind, accept: Callable[[re.Match[str]], bool] | None = accept) -> str:
            if accept is not None and not accept(match):
                return match.group(0)
            if kind not in found:
                found.append(kind)
            return f"[{kind}]"

        text = pattern.sub(mask, text)
    return found, text


class PIIDetectionGuardrail(Guardrail):
    """Refuses input carrying personal data, or with ``mask_pii`` replaces each value with its kind
    (``[email]``, ``[phone]``, ``[card_number]``, ``[national_id]``) so the model never sees it.
    ``kinds`` limits the check to some of those."""

    def __init__(self, *, mask_pii: bool = False, kinds: Sequence[str] | None = None, name: str | None = None) -> None:
        known = {kind for kind, _, _ in PII_KINDS}
        if kinds is not None and not set(kinds) <= known:
            raise ValueError(f"PII kinds are {', '.join(sorted(known))}, not {sorted(set(kinds) - known)}")
        self.mask_pii = mask_pii
        self.kinds = list(kinds) if kinds is not None else None
        self.name = name or ("pii_mask" if mask_pii else "pii")

    def check(self, run_input: RunInput) -> None:
        found, masked = find_pii(run_input.input_content_string(), self.kinds)
        if not found:
            return
        if self.mask_pii:
            run_input.input_content = masked
            return
        raise InputCheckError(
            f"Personal data detected in the input ({', '.join(found)}); remove it and send the message again.",
            check_trigger=CheckTrigger.PII_DETECTED, additional_data={"detected_pii": found},
        )


# ---- prompt injection ---------------------------------------------------------------------------

INJECTION_PATTERNS = (
    r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|your|the system'?s?)\b.{0,20}\b(instructions?|prompts?|rules|guidelines|directions)\b",
    r"\bforget (everything|all)( (above|before|you were told))?\b",
    r"\byou are now (a|an|in|no longer)\b",
    r"\b(developer|god|dan|jailbreak) mode\b",
    r"\bjailbreak\b",
    r"\b(reveal|print|show|repeat|leak)\b.{0,30}\b(system prompt|hidden instructions|your instructions)\b",
    r"\b(pretend|act as if) (you are|you're|to be)\b.{0,60}\b(no|without|free of) (restrictions|rules|filters|limits)\b",
    r"\b(bypass|disable|ignore)\b.{0,20}\b(safety|safeguards|restrictions|filters|content policy)\b",
    r"\b(admin|root|sudo) (override|access|mode)\b",
)


class PromptInjectionGuardrail(Guardrail):
    """Refuses input phrased as the common jailbreaks (ignore your instructions, developer mode,
    reveal your system prompt, ...). ``patterns`` (regular expressions, case-insensitive) replace
    the shipped list."""

    name = "prompt_injection"

    def __init__(self, *, patterns: Sequence[str] | None = None) -> None:
        self.patterns = [re.compile(p, re.IGNORECASE | re.DOTALL) for p in (patterns or INJECTION_PATTERNS)]

    def check(self, run_input: RunInput) -> None:
        text = " ".join(run_input.input_content_string().split())
        if any(pattern.search(text) for pattern in self.patterns):
            raise InputCheckError(
                "The input looks like an attempt to override the agent's instructions (prompt injection), so it was not sent to the model.",
                check_trigger=CheckTrigger.PROMPT_INJECTION,
            )


# ---- OpenAI moderation --------------------------------------------------------------------------


class OpenAIModerationGuardrail(Guardrail):
    """Refuses input that OpenAI's moderation endpoint flags (all categories, or only
    ``categories``). Without an API key (``api_key`` or ``OPENAI_API_KEY``) it checks nothing and
    logs that it was skipped: moderation is a service the deployment opts into with its key. A
    failing endpoint refuses nothing either (it is logged): moderation must not take the agent down."""

    name = "openai_moderation"

    def __init__(
        self, *, model: str = "omni-moderation-latest", categories: Sequence[str] | None = None, api_key: str | None = None,
        base_url: str | None = None, timeout: float = 10.0,
    ) -> None:
        self.model = model
        self.categories = list(categories) if categories is not None else None
        self.api_key = api_key
        self.base_url = base_url
        self.timeout = timeout

    def check(self, run_input: RunInput) -> None:
        raise TypeError("OpenAIModerationGuardrail waits on the network: the run loop calls acheck")

    async def acheck(self, run_input: RunInput) -> None:
        import httpx

        api_key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            logger.info("moderation skipped: no OpenAI API key")
            return
        base_url = (self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.post(
                    f"{base_url}/moderations", headers={"Authorization": f"Bearer {api_key}"},
                    json={"model": self.model, "input": run_input.input_content_string()},
                )
                response.raise_for_status()
                result = response.json()["results"][0]
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            logger.warning("moderation failed", extra={"error": type(exc).__name__})
            return
        flagged = _flagged(result, self.categories)
        if flagged:
            raise InputCheckError(
                f"The input was flagged by content moderation ({', '.join(flagged)}).",
                check_trigger=CheckTrigger.INPUT_NOT_ALLOWED, additional_data={"flagged_categories": flagged},
            )


def _flagged(result: Mapping[str, Any], categories: Sequence[str] | None) -> list[str]:
    if not result.get("flagged"):
        return []
    flagged = [name for name, on in (result.get("categories") or {}).items() if on]
    return [name for name in flagged if categories is None or name in categories]


# ---- by name ------------------------------------------------------------------------------------

GUARDRAILS: dict[str, tuple[str, Callable[[], Guardrail]]] = {
    "pii": ("Refuse messages carrying personal data (emails, phones, card numbers, national ids)", PIIDetectionGuardrail),
    "pii_mask": ("Mask personal data before the model sees it", lambda: PIIDetectionGuardrail(mask_pii=True)),
    "prompt_injection": ("Refuse prompt-injection attempts", PromptInjectionGuardrail),
    "openai_moderation": ("Refuse what OpenAI moderation flags (needs OPENAI_API_KEY)", OpenAIModerationGuardrail),
}


def guardrail_by_name(name: str) -> Guardrail:
    """The shipped guardrail ``name`` (a key of ``GUARDRAILS``), new; KeyError names the choices."""
    if name not in GUARDRAILS:
        raise KeyError(f"Unknown guardrail {name!r}; choose from {', '.join(GUARDRAILS)}")
    return GUARDRAILS[name][1]()
