"""Maximum lengths of the free text people type: notes, evidence quotes, comments,
rationales, flags' and proposals' reasons (settings CARDSORT_MAX_*_CHARS,
docs/configuration.md). One validator, `TextLimit`, serves the models (field validators: nothing
changes in the database, so rows stored before a limit existed stay as they are), the forms
and the API's serializers; the label import calls `check_length`. The error names the field
and the limit: "Note: at most 10,000 characters (yours has 45,000,000)."."""

from __future__ import annotations

from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.utils.deconstruct import deconstructible

# kind -> (setting, default, the field's name in an error)
LIMITS = {
    "note": ("CARDSORT_MAX_NOTE_CHARS", 10_000, "Note"),
    "evidence": ("CARDSORT_MAX_EVIDENCE_CHARS", 20_000, "Evidence"),
    "comment": ("CARDSORT_MAX_COMMENT_CHARS", 20_000, "Comment"),
    "rationale": ("CARDSORT_MAX_COMMENT_CHARS", 20_000, "Rationale"),
    "definition": ("CARDSORT_MAX_COMMENT_CHARS", 20_000, "Definition"),
    "reason": ("CARDSORT_MAX_COMMENT_CHARS", 20_000, "Reason"),
    # a flag's reason: FlagForm's own 2,000, whose message tests/nav pins
    "flag": (None, 2_000, "Reason"),
}


def max_chars(kind: str) -> int:
    """The limit of a kind of text now (settings are read at each call: tests override them)."""
    setting, default, _ = LIMITS[kind]
    return int(getattr(settings, setting, default)) if setting else default


def too_long(kind: str, value: str, field: str | None = None) -> str | None:
    """Why `value` is too long for its kind, naming the field and the limit; None if it fits."""
    limit = max_chars(kind)
    if value is None or len(value) <= limit:
        return None
    name = field or LIMITS[kind][2]
    return f"{name}: at most {limit:,} characters (yours has {len(value):,})."


@deconstructible
class TextLimit(MaxLengthValidator):
    """A field validator: the kind's limit, read from the settings when it runs. A
    MaxLengthValidator whose limit is a callable, so that the API schema (drf-spectacular)
    shows it as maxLength."""

    def __init__(self, kind: str) -> None:
        if kind not in LIMITS:
            raise ValueError(f"unknown kind of text {kind!r}")
        self.kind = kind
        super().__init__(partial(max_chars, kind))

    def __call__(self, value) -> None:
        problem = too_long(self.kind, value)
        if problem:
            raise ValidationError(problem, code=self.code, params={"limit": max_chars(self.kind)})

    def __eq__(self, other) -> bool:
        return isinstance(other, TextLimit) and other.kind == self.kind

    def __hash__(self) -> int:
        return hash(self.kind)


def check_length(kind: str, value: str, error: type[Exception] = ValueError) -> str:
    """`value` if it fits its kind's limit, else `error` naming the field by its key ("note:
    at most ..."), for code outside forms and serializers (the label import)."""
    problem = too_long(kind, value, field=kind)
    if problem:
        raise error(problem)
    return value
