"""Keeping credentials out of logs and error reports."""
from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class CredentialFilter(SafeExceptionReporterFilter):
    """Django's filter, also hiding the Authorization header and idempotency keys."""

    hidden_settings = re.compile(r"API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|AUTHORIZATION", flags=re.I)
