"""Model providers behind one interface, and ``get_model("provider:model_id")``.

Importing this package does not import the provider SDKs; each provider imports its SDK on first
use.
"""
from __future__ import annotations

from typing import Any

from engine.models.base import (
    Model,
    ModelChunk,
    ProviderData,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from engine.models.chain import ModelChain
from engine.models.options import definition_options

PROVIDERS = ("openai", "anthropic", "offline")


def get_model(spec: str | Model, **options: Any) -> Model:
    """Build a model from ``"provider:model_id"`` (``openai:gpt-4o-mini``, ``anthropic:claude-...``,
    ``offline:demo``). ``options`` go to the provider's constructor: the connection
    (``api_key``, ``base_url``, ``timeout``; ``sleep`` for the offline model) and the generation
    options of ``options.PROVIDER_OPTIONS`` (OpenAI: ``temperature``, ``max_tokens``, ``top_p``,
    ``stop``, ``seed``, ``response_format``, ``reasoning_effort``, ``reasoning_summary``,
    ``service_tier``, ``verbosity``; Anthropic: ``temperature``, ``max_tokens``, ``top_p``,
    ``stop``, ``thinking_budget``). A ``Model`` instance is returned unchanged.
    """
    if isinstance(spec, Model):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(
            f"Model must look like 'provider:model_id' (e.g. 'openai:gpt-4o-mini', 'offline:demo'), got {spec!r}"
        )
    provider, _, model_id = spec.partition(":")
    provider = provider.strip().lower()
    model_id = model_id.strip()
    if not provider or not model_id:
        raise ValueError(
            f"Model must look like 'provider:model_id' (e.g. 'openai:gpt-4o-mini', 'offline:demo'), got {spec!r}"
        )
    # Plain imports of our provider modules are cheap: they import their SDK only when called.
    if provider == "openai":
        from engine.models.openai import OpenAIChat

        return OpenAIChat(model_id, **options)
    if provider == "anthropic":
        from engine.models.anthropic import Claude

        return Claude(model_id, **options)
    if provider == "offline":
        from engine.models.offline import OfflineModel

        return OfflineModel(model_id, **options)
    raise ValueError(f"Unknown model provider {provider!r} in {spec!r}; known providers: {', '.join(PROVIDERS)}")


def model_from_definition(spec: str, options: Any = None) -> Model:
    """The model a stored definition names, with its stored generation options: only option
    names its provider takes (never connection settings such as an API key), each checked.
    Raises ValueError saying what is wrong."""
    model = get_model(spec)
    if not options:
        return model
    provider = spec.partition(":")[0].strip().lower()
    try:
        return get_model(spec, **definition_options(provider, options))
    except TypeError as exc:
        raise ValueError(str(exc)) from None


__all__ = [
    "Model",
    "ModelChain",
    "ModelChunk",
    "PROVIDERS",
    "ProviderData",
    "ReasoningDelta",
    "TextDelta",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "get_model",
    "model_from_definition",
]
