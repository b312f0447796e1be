"""Tools the model can call: ``@tool``, ``Function``, ``Toolkit`` and the built-in toolkits."""
from __future__ import annotations

from engine.tools.calculator import CalculatorTools
from engine.tools.clock import DateTimeTools
from engine.tools.function import Function, approval, tool
from engine.tools.http_fetch import FetchRefused, HttpFetchTools
from engine.tools.toolkit import Toolkit
from engine.tools.workspace import Workspace

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
