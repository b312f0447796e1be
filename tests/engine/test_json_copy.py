"""engine.output.json_copy: the deep copy run data goes through (RunOutput, events)."""
from __future__ import annotations

from collections import OrderedDict

from engine.output import json_copy


class Tally:
    def __init__(self) -> None:
        self.seen = [1]


def test_dicts_and_lists_are_copied_all_the_way_down() -> None:
    original = {"messages": [{"role": "user", "content": "hi", "tags": ["a"]}], "state": {"n": 1}}
    copied = json_copy(original)
    assert copied == original
    copied["messages"][0]["tags"].append("b")
    copied["state"]["n"] = 2
    assert original == {"messages": [{"role": "user", "content": "hi", "tags": ["a"]}], "state": {"n": 1}}


def test_anything_else_mutable_is_deep_copied_too() -> None:
    tally, ordered = Tally(), OrderedDict(a=[1])
    copied = json_copy({"tally": tally, "ordered": ordered, "seen": {1, 2}, "pair": (["x"],)})
    assert copied["tally"] is not tally and copied["tally"].seen == [1] and copied["tally"].seen is not tally.seen
    assert type(copied["ordered"]) is OrderedDict and copied["ordered"]["a"] is not ordered["a"]
    assert copied["seen"] == {1, 2}
    assert copied["pair"] == (["x"],)
    copied["pair"][0].append("y")
    assert copied["pair"] == (["x", "y"],)


def test_strings_numbers_and_none_are_shared() -> None:
    text = "x" * 1000
    assert json_copy([text, 1, 2.5, True, None]) == [text, 1, 2.5, True, None]
    assert json_copy([text])[0] is text
    assert json_copy({"nested": [{"text": text}]})["nested"][0]["text"] is text
