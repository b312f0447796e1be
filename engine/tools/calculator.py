"""Arithmetic tools. Results are JSON strings in Agno's format (``{"operation", "result"}``);
impossible operations answer ``{"operation", "error"}`` instead of raising."""
from __future__ import annotations

import json
import math

from engine.tools.function import tool
from engine.tools.toolkit import Toolkit


def _result(operation: str, value: float | int | bool) -> str:
    return json.dumps({"operation": operation, "result": value})


def _error(operation: str, message: str) -> str:
    return json.dumps({"operation": operation, "error": message})


class CalculatorTools(Toolkit):
    id = "calculator"
    name = "calculator"

    @tool
    def add(self, a: float, b: float) -> str:
        """Add two numbers and return the result.

        Args:
            a: First number.
            b: Second number.
        """
        return _result("addition", a + b)

    @tool
    def subtract(self, a: float, b: float) -> str:
        """Subtract the second number from the first and return the result.

        Args:
            a: First number.
            b: Second number.
        """
        return _result("subtraction", a - b)

    @tool
    def multiply(self, a: float, b: float) -> str:
        """Multiply two numbers and return the result.

        Args:
            a: First number.
            b: Second number.
        """
        return _result("multiplication", a * b)

    @tool
    def divide(self, a: float, b: float) -> str:
        """Divide the first number by the second and return the result.

        Args:
            a: Numerator.
            b: Denominator.
        """
        if b == 0:
            return _error("division", "Division by zero is undefined")
        return _result("division", a / b)

    @tool
    def exponentiate(self, a: float, b: float) -> str:
        """Raise the first number to the power of the second and return the result.

        Args:
            a: Base.
            b: Exponent.
        """
        try:
            return _result("exponentiation", math.pow(a, b))
        except (OverflowError, ValueError) as exc:
            return _error("exponentiation", str(exc))

    @tool
    def factorial(self, n: int) -> str:
        """Calculate the factorial of a number and return the result.

        Args:
            n: Number to calculate the factorial of.
        """
        if n < 0:
            return _error("factorial", "Factorial of a negative number is undefined")
        if n > 1000:
            # Bounded so a model cannot pin a worker computing a million-digit number.
            return _error("factorial", "Factorial is limited to n <= 1000")
        return _result("factorial", math.factorial(n))

    @tool
    def is_prime(self, n: int) -> str:
        """Check whether a number is prime.

        Args:
            n: Number to check.
        """
        if n <= 1:
            return _result("prime_check", False)
        if n > 10**12:
            return _error("prime_check", "Prime check is limited to n <= 10**12")
        return _result("prime_check", all(n % i for i in range(2, math.isqrt(n) + 1)))

    @tool
    def square_root(self, n: float) -> str:
        """Calculate the square root of a number and return the result.

        Args:
            n: Number to calculate the square root of.
        """
        if n < 0:
            return _error("square_root", "Square root of a negative number is undefined")
        return _result("square_root", math.sqrt(n))
