import pytest


@pytest.fixture(autouse=True)
def _tracing_on(settings):
    """Tracing is on in development and opt-in in production; these tests turn it on, and every
    span is written before the test's database is flushed (the exporter's thread must not write
    into the next test)."""
    from traces.provider import flush

    settings.TRACING = True
    yield
    flush()
