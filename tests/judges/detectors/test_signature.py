"""signature-mismatch, from TAXONOMY.md's definition: "the reply calls a function, class or
method defined earlier in the conversation with a signature that breaks that earlier
contract" (the example: an EventBus exposes subscribe(handler); the EventSystem written in
turn 3 calls bus.subscribe(event_type, handler))."""

from __future__ import annotations

import pytest

from annotation.judges.detectors import detect, get

from .conftest import conversation, fence

DETECTOR = get("signature-mismatch")

BUS = """
class EventBus:
    def __init__(self):
        self.handlers = []

    def subscribe(self, handler):
        self.handlers.append(handler)

    def publish(self, event):
        for handler in self.handlers:
            handler(event)
"""

FETCH = """
def fetch(url, /, retries=3, *, timeout=10.0, **headers):
    return url, retries, timeout, headers
"""


def results(turns):
    return [(i, s) for i, s, _ in detect(DETECTOR, turns)]


def test_the_taxonomy_example_a_method_called_with_an_extra_argument():
    system = """
class EventSystem:
    def __init__(self, bus):
        self.bus = bus

    def on(self, event_type, handler):
        self.bus.subscribe(event_type, handler)
"""
    turns = conversation(
        ("Write an event bus.", fence(BUS)),
        ("Add publishing.", "Done, `publish` is there."),
        ("Now an EventSystem over it.", fence(system)),
    )
    found = detect(DETECTOR, turns)
    assert [(i, s) for i, s, _ in found] == [(2, 0.8)]
    evidence = found[0][2]
    assert evidence.turns == (0, 2)
    assert evidence.quotes == (
        "def subscribe(self, handler):",
        "self.bus.subscribe(event_type, handler)",
    )
    assert "too many positional arguments" in evidence.detail


@pytest.mark.parametrize(
    "call",
    [
        "fetch()",  # the url is missing
        "fetch('u', 1, 2)",  # timeout is keyword-only
        "fetch('u', 1, retries=2)",  # retries twice
        "fetch(url='u')",  # url is positional-only: the keyword goes to **headers, url is missing
    ],
)
def test_a_call_that_cannot_bind_is_a_mismatch(call):
    turns = conversation(
        ("Here is my helper:\n" + fence(FETCH), "Noted."), ("Use it.", fence(f"data = {call}"))
    )
    assert results(turns) == [(1, 1.0)], call


@pytest.mark.parametrize(
    "call",
    [
        "fetch('u')",
        "fetch('u', 5)",
        "fetch('u', retries=5, timeout=1)",
        "fetch('u', accept='json', timeout=2)",  # **headers takes any keyword
    ],
)
def test_calls_that_bind_are_no_mismatch(call):
    turns = conversation(
        ("Here is my helper:\n" + fence(FETCH), "Noted."), ("Use it.", fence(f"data = {call}"))
    )
    assert results(turns) == [(1, 0.0)]


@pytest.mark.parametrize("call", ["fetch(*args)", "fetch('u', **options)", "fetch(*a, 1, 2, 3)"])
def test_a_call_with_splats_cannot_be_decided_and_is_not_judged(call):
    turns = conversation(
        ("Here is my helper:\n" + fence(FETCH), "Noted."), ("Use it.", fence(f"data = {call}"))
    )
    assert detect(DETECTOR, turns) == []


def test_a_class_is_called_with_its_init_signature():
    turns = conversation(
        (
            "Bus.",
            fence("class Bus:\n    def __init__(self, name, size=1):\n        self.name = name"),
        ),
        ("Make two.", fence("a = Bus('a')\nb = Bus('b', 2, 3)")),
    )
    assert results(turns) == [(1, 1.0)]


def test_a_function_the_reply_redefines_is_its_own():
    turns = conversation(
        ("Add.", fence("def add(a, b):\n    return a + b")),
        (
            "Add three numbers.",
            fence("def add(a, b, c):\n    return a + b + c\n\nprint(add(1, 2, 3))"),
        ),
    )
    assert detect(DETECTOR, turns) == []  # no call of an earlier definition: not judged


def test_a_decorated_definition_and_unparseable_code_are_skipped():
    turns = conversation(
        ("Route.", fence("@app.route('/')\ndef index(request):\n    return 'hi'")),
        ("Call it.", fence("index()")),
        ("Broken.", fence("def add(a, b):\n    return a + b")),
        ("Call it.", fence("add(1, 2, 3\nif x")),
    )
    assert detect(DETECTOR, turns) == []


def test_a_method_name_a_builtin_type_has_is_not_resolved():
    turns = conversation(
        ("Cache.", fence("class Cache:\n    def get(self, key):\n        return None")),
        ("Use a dict.", fence("value = settings.get('a', 'b')")),
    )
    assert detect(DETECTOR, turns) == []
