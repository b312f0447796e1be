"""Tools the model can call: ``@tool``, ``Function``, ``Toolkit`` and the built-in toolkits."""
from __future__ import annotations

from agents.runtime.tools.calculator import CalculatorTools
from agents.runtime.tools.clock import DateTimeTools
from agents.runtime.tools.function import Function, approval, tool
from agents.runtime.tools.http_fetch import FetchRefused, HttpFetchTools
from agents.runtime.tools.toolkit import Toolkit
from agents.runtime.tools.workspace import Workspace

__all__ = [
    "CalculatorTools",
    "DateTimeTools",
    "FetchRefused",
    "Function",
    "HttpFetchTools",
    "Toolkit",
    "Workspace",
    "approval",
    "tool",
]
