"""The docs pages load nothing from another origin (offline sites, a strict CSP): every asset
they reference, and every image their scripts put on the page, is served by the project."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.django_db

# An image or script a bundle loads by itself: `src:"https://…"` (React props), or a CSS url().
FETCHED_BY_SCRIPT = re.compile(r"""(?:\bsrc\s*:\s*|url\()\s*["']?(https?:)?//[^"')\s]+""")


class Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "spec-url", "action") and value:
                self.urls.append((tag, value))


def page_assets(client, path: str) -> list[tuple[str, str]]:
    response = client.get(path)
    assert response.status_code == 200
    parser = Assets()
    parser.feed(response.content.decode())
    assert parser.urls
    return parser.urls


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_a_docs_page_and_its_scripts_reference_no_other_origin(client, path) -> None:
    for tag, url in page_assets(client, path):
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc and url.startswith("/"), (path, tag, url)
        if tag in ("script", "link"):
            response = client.get(url)
            assert response.status_code == 200, url
            text = body(response).decode("utf-8", "replace")
            assert [match.group(0) for match in FETCHED_BY_SCRIPT.finditer(text)] == [], url


def test_redoc_shows_its_credit_with_our_logo(client) -> None:
    (script,) = [url for tag, url in page_assets(client, "/redoc") if tag == "script"]
    text = body(client.get(script)).decode()
    assert "cdn.redoc.ly" not in text
    assert 'src:"/static/core/docs/redoc-logo.svg"' in text
    assert client.get("/static/core/docs/redoc-logo.svg").status_code == 200


def test_the_redoc_script_is_cached_by_its_etag(client) -> None:
    (script,) = [url for tag, url in page_assets(client, "/redoc") if tag == "script"]
    first = client.get(script)
    again = client.get(script, HTTP_IF_NONE_MATCH=first["ETag"])
    assert (again.status_code, again.content) == (304, b"")
