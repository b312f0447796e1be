"""Strict readers for environment variables.

django-environ casts leniently (``DEBUG=maybe`` reads as False, ``PORT=abc`` raises a bare
ValueError). Settings here go through these readers instead, so a malformed value stops
start-up with ``ImproperlyConfigured`` naming the variable. Secrets also accept ``<NAME>_FILE``.
"""
from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def string(name: str, default: str | None = None) -> str | None:
    value = raw(name)
    return default if value is None else value


def boolean(name: str, default: bool) -> bool:
    value = raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {value!r}")


def integer(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = raw(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")
    return number


def number(name: str, default: float, *, minimum: float | None = None) -> float:
    value = raw(name)
    if value is None:
        return default
    try:
        result = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if minimum is not None and result < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {result}")
    return result


def listing(name: str, default: list[str] | None = None) -> list[str]:
    value = raw(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


# DRF reads the unit by its first letter, so "10/min" is 10 a minute.
_RATE = re.compile(r"\d+/[smhd][a-z]*")


def rate(name: str, default: str) -> str:
    """A request rate in DRF's grammar: ``<n>/second|minute|hour|day``."""
    value = string(name, default)
    assert value is not None
    if not _RATE.fullmatch(value):
        raise ImproperlyConfigured(f"{name} must be <n>/second, <n>/minute, <n>/hour or <n>/day, got {value!r}")
    return value


def networks(name: str) -> list[str]:
    """Comma-separated IP addresses or networks (``10.0.0.0/8``, ``::1``)."""
    entries = listing(name)
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {entry!r} is not an IP address or network") from None
    return entries


_SERVER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


def named_targets(name: str, default: str) -> dict[str, str]:
    """``name=target`` entries separated by commas (``docs=https://mcp.example/mcp, planets=python
    -m mcp_server.demo_tools``): names are lowercase slugs, each once; a target is an http(s) URL
    or a command line. ``none`` names none."""
    value = string(name, default) or ""
    if value.lower() == "none":
        return {}
    found: dict[str, str] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        key, sep, target = (piece.strip() for piece in entry.partition("="))
        if not sep or not target or not _SERVER_NAME.fullmatch(key):
            raise ImproperlyConfigured(f"{name}: {entry!r} is not name=command or name=url (a lowercase name: letters, digits, - and _)")
        if key in found:
            raise ImproperlyConfigured(f"{name}: {key!r} is named twice")
        if target.startswith(("http://", "https://")) and not urlsplit(target).hostname:
            raise ImproperlyConfigured(f"{name}: {target!r} has no host")
        found[key] = target
    return found


def secret(name: str) -> str | None:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker/Kubernetes secrets)."""
    value = raw(name)
    path = raw(f"{name}_FILE")
    if value is not None and path is not None:
        raise ImproperlyConfigured(f"set {name} or {name}_FILE, not both")
    if path is not None:
        try:
            return Path(path).read_text().strip() or None
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path!r}: {exc.strerror}") from None
    return value


def database(name: str, default: str) -> dict:
    url = string(name, default)
    assert url is not None
    scheme = urlsplit(url).scheme
    if scheme not in {"sqlite", "postgres", "postgresql", "pgsql", "psql"}:
        raise ImproperlyConfigured(
            f"{name} must be a sqlite:/// or postgres:// URL, got scheme {scheme or '(none)'!r}"
        )
    config = environ.Env.db_url_config(url)
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"{name} names no database: {url!r}")
    return config


def redis_url(name: str) -> str | None:
    url = string(name)
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss", "unix"}:
        raise ImproperlyConfigured(f"{name} must be a redis://, rediss:// or unix:// URL, got {url!r}")
    if parts.scheme != "unix" and not parts.hostname:
        raise ImproperlyConfigured(f"{name} names no host: {url!r}")
    return url
