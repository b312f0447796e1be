"""Request limits per user and per token, with 429 and Retry-After (DRF throttling)."""
from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from core.auth import Principal


class PrincipalRateThrottle(SimpleRateThrottle):
    """One bucket per token, else per user, else per client address."""

    scope = "principal"

    def get_rate(self) -> str:
        return settings.RATE_LIMIT_USER

    def allow_request(self, request, view) -> bool:
        principal = request.user if isinstance(request.user, Principal) else None
        anonymous = principal is None or principal.user_id is None and principal.token_id is None
        self.rate = settings.RATE_LIMIT_ANONYMOUS if anonymous else settings.RATE_LIMIT_USER
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view) -> str:
        principal = request.user if isinstance(request.user, Principal) else None
        if principal is not None and principal.token_id is not None:
            ident = f"token:{principal.token_id}"
        elif principal is not None and principal.user_id is not None:
            ident = f"user:{principal.user_id}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return f"throttle:{ident}"
