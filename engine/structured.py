"""Structured output: normalising ``output_schema`` and parsing the model's JSON answer."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import OutputSchemaError

_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


@dataclass(frozen=True)
class OutputSchema:
    schema: dict[str, Any]
    title: str
    model_class: Any = None  # the pydantic model, when one was given

    @classmethod
    def of(cls, value: Any) -> OutputSchema | None:
        """From a JSON schema dict or a pydantic model class (pydantic is only touched then)."""
        if value is None:
            return None
        if isinstance(value, Mapping):
            return cls(schema=dict(value), title=str(value.get("title") or "dict"))
        if isinstance(value, type) and hasattr(value, "model_json_schema"):
            return cls(schema=dict(value.model_json_schema()), title=value.__name__, model_class=value)
        raise TypeError("output_schema must be a JSON schema dict or a pydantic model class")

    def instructions(self) -> str:
        return (
            "Respond only with a JSON object that validates against this JSON schema, with no other text:\n"
            + json.dumps(self.schema, ensure_ascii=False)
        )

    def parse(self, text: str) -> Any:
        stripped = text.strip()
        fenced = _FENCE_RE.match(stripped)
        if fenced:
            stripped = fenced.group(1)
        try:
            value = json.loads(stripped)
        except ValueError as exc:
            raise OutputSchemaError(f"The model's answer is not valid JSON for {self.title}: {exc}") from None
        if self.model_class is not None:
            try:
                return self.model_class.model_validate(value).model_dump(mode="json")
            except Exception as exc:  # pydantic.ValidationError, without importing pydantic here
                raise OutputSchemaError(f"The model's answer does not match {self.title}: {exc}") from None
        if self.schema.get("type") == "object" or "properties" in self.schema:
            if not isinstance(value, dict):
                raise OutputSchemaError(f"The model's answer is not a JSON object for {self.title}")
            missing = [key for key in self.schema.get("required", []) if key not in value]
            if missing:
                raise OutputSchemaError(f"The model's answer lacks required fields of {self.title}: {missing}")
        return value
