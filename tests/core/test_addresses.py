"""core.addresses: the client address believes X-Forwarded-For only from a trusted proxy."""
from __future__ import annotations

import pytest
from django.test import RequestFactory

from core.addresses import client_address, scope_client_address


def address(settings, *, peer: str | None, forwarded: str | None = None, trusted: list[str] | None = None) -> str | None:
    settings.TRUSTED_PROXIES = trusted or []
    meta = {"REMOTE_ADDR": peer or ""}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(RequestFactory().get("/", **meta))


def test_without_trusted_proxies_the_header_is_ignored(settings) -> None:
    assert address(settings, peer="203.0.113.9", forwarded="198.51.100.1") == "203.0.113.9"


def test_an_untrusted_peer_cannot_name_another_client(settings) -> None:
    assert address(settings, peer="203.0.113.9", forwarded="198.51.100.1", trusted=["10.0.0.0/8"]) == "203.0.113.9"


def test_behind_a_trusted_proxy_the_right_most_untrusted_hop_is_the_client(settings) -> None:
    # The client sent "1.1.1.1" itself; the proxy appended the address it saw, 198.51.100.7.
    assert address(settings, peer="10.0.0.2", forwarded="1.1.1.1, 198.51.100.7", trusted=["10.0.0.0/8"]) == "198.51.100.7"


def test_a_chain_of_trusted_proxies_is_walked_from_the_right(settings) -> None:
    got = address(settings, peer="10.0.0.2", forwarded="1.1.1.1, 198.51.100.7, 10.0.0.5, 192.0.2.1", trusted=["10.0.0.0/8", "192.0.2.1"])
    assert got == "198.51.100.7"


def test_a_hop_that_is_no_address_ends_the_walk_at_the_last_trusted_one(settings) -> None:
    assert address(settings, peer="10.0.0.2", forwarded="198.51.100.7, not-an-ip", trusted=["10.0.0.0/8"]) == "10.0.0.2"
    assert address(settings, peer="10.0.0.2", forwarded="", trusted=["10.0.0.0/8"]) == "10.0.0.2"


def test_ipv6_peers_and_networks(settings) -> None:
    assert address(settings, peer="::1", forwarded="2001:db8::7", trusted=["::1"]) == "2001:db8::7"
    assert address(settings, peer="2001:db8::1", forwarded="2001:db8::7", trusted=["::1"]) == "2001:db8::1"


def test_no_peer_is_no_address(settings) -> None:
    assert address(settings, peer=None, forwarded="198.51.100.1", trusted=["10.0.0.0/8"]) is None


@pytest.mark.parametrize(("trusted", "expected"), [([], "10.0.0.2"), (["10.0.0.0/8"], "198.51.100.7")])
def test_an_asgi_scope_is_read_the_same_way(settings, trusted: list[str], expected: str) -> None:
    settings.TRUSTED_PROXIES = trusted
    scope = {"client": ("10.0.0.2", 50000), "headers": [(b"x-forwarded-for", b"1.1.1.1"), (b"x-forwarded-for", b"198.51.100.7")]}
    assert scope_client_address(scope) == expected
    assert scope_client_address({"client": None, "headers": []}) is None
