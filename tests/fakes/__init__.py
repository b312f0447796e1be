"""Local fake model-provider servers for tests (stdlib HTTP, ephemeral 127.0.0.1 ports).

``tests.fakes.openai_server.FakeOpenAIServer`` and ``tests.fakes.anthropic_server.FakeAnthropicServer``
share one control API, documented in ``tests/fakes/_base.py`` (``FakeServer``).
"""
