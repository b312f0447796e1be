"""The client address of a request: the one function every limit, lockout and log asks.

``X-Forwarded-For`` is written by whoever sends the request, so it names the client only when the
direct peer is a proxy we trust (``TRUSTED_PROXIES``) to have appended the address it saw. Then the
right-most address that is not itself a trusted proxy is the client: everything to its left came
from the client and may be made up. With no trusted proxies (the default) the header is ignored,
so a client cannot pick a fresh address for each request to dodge a per-address limit.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def trusted_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """``TRUSTED_PROXIES`` entries (addresses or networks) as networks; base.py has validated them."""
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def resolve_client_address(peer: str | None, forwarded_for: Iterable[str]) -> str | None:
    """The client's address, given the direct peer's and the ``X-Forwarded-For`` header values."""
    networks = trusted_networks(tuple(settings.TRUSTED_PROXIES))
    if not peer or not networks or not _trusted(peer, networks):
        return peer
    client = peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",")]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break  # not written by a proxy of ours: the last hop we could vouch for is the client
        client = hop
        if not _trusted(hop, networks):
            break
    return client


def client_address(request: Any) -> str | None:
    """The client address of a Django ``HttpRequest`` (or DRF ``Request``)."""
    meta = request.META
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    return resolve_client_address(meta.get("REMOTE_ADDR") or None, [forwarded] if forwarded else [])


def scope_client_address(scope: dict[str, Any]) -> str | None:
    """The client address of an ASGI connection (WebSockets, which have no HttpRequest)."""
    client = scope.get("client")
    peer = client[0] if client else None
    forwarded = [value.decode("latin-1") for name, value in scope.get("headers", []) if name == b"x-forwarded-for"]
    return resolve_client_address(peer, forwarded)
