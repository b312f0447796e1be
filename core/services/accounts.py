"""Login accounts for the people who use the chat UI (not operators: those are staff)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction


class AccountError(ValueError):
    """A username or password this site refuses; the message says why."""


def account_create(*, username: str, password: str, email: str = ""):
    """A new active, non-staff account: it signs in to the chat UI and sees only its own data.
    The username is its user id everywhere (sessions, memories, tokens)."""
    User = get_user_model()
    user = User(username=username, email=email, is_staff=False, is_superuser=False)
    try:
        user.full_clean(exclude=["password"])
        validate_password(password, user=user)
    except ValidationError as exc:
        raise AccountError(" ".join(exc.messages)) from exc
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError as exc:  # a concurrent create of the same name
        raise AccountError("A user with that username already exists.") from exc
    return user
