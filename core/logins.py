"""Browser logins (the chat UI's and the admin's) locked out after repeated failures (django-axes).

axes counts failed logins per account and per client address (``core.addresses``) and refuses
every login of a locked account or address, right password or not, until its cool-off has passed
(``LOGIN_FAILURE_LIMIT``, ``LOGIN_LOCKOUT_MINUTES``). The login forms here say so on the login
page instead of "wrong password"; ``core.middleware.LoginLockoutMiddleware`` makes that page a 429.
"""
from __future__ import annotations

import math

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError


class LoginLockoutBackend(AxesStandaloneBackend):
    """axes' check in front of ModelBackend, for logins that come with a request.

    ``authenticate()`` without a request is not a browser login (the test client's ``login()``,
    scripts): there is no address to count, so it goes on to ModelBackend as before, where axes'
    own backend would raise.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def lockout_message() -> str:
    minutes = max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    return f"Too many failed login attempts; try again in {minutes} minute{'' if minutes == 1 else 's'}."


class LockoutMessageMixin:
    def get_invalid_login_error(self) -> ValidationError:
        # axes marks the request when this login was refused for a lockout (or caused one).
        if getattr(self.request, "axes_locked_out", False):
            return ValidationError(lockout_message(), code="locked_out")
        return super().get_invalid_login_error()


class LoginForm(LockoutMessageMixin, AuthenticationForm):
    pass


class AdminLoginForm(LockoutMessageMixin, AdminAuthenticationForm):
    pass
