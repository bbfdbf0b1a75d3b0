"""The annotators' side of a split: their labels waiting for one, the questions each asks,
and their answer (a new revision; the card's round goes on). The package's docstring gives
the rules."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from taxonomy.models import Type

from ..models import Annotation, CardState, Study
from ..models.queue import sync_states
from .move import Carrier, EvolutionError, pending_in


def pending_labels(user, study: Study):
    """`user`'s own labels waiting for a split side, oldest card first."""
    return (
        pending_in(study)
        .filter(annotator=user)
        .select_related("turn__conversation", "taxonomy_version")
        .prefetch_related("types")
        .order_by("turn__conversation_id", "turn__index", "round")
    )


@dataclass
class SplitQuestion:
    """One split type of one pending label: the old type and the parts to choose from."""

    code: str
    name: str
    parts: list[Type]


def split_questions(row: Annotation) -> list[SplitQuestion]:
    """The questions a pending label asks its annotator: per split code, its parts in the
    study's version."""
    source = row.carried_from
    source_version = source.taxonomy_version_id if source else row.taxonomy_version.parent_id
    carrier = Carrier(row.taxonomy_version)
    names = dict(Type.objects.filter(axis__version_id=source_version).values_list("code", "name"))
    current = row.turn.conversation.study.taxonomy_version.types_by_code()
    out = []
    for code in row.split_pending.split():
        parts = [current[c] for c in carrier.targets(code, source_version) if c in current]
        out.append(SplitQuestion(code=code, name=names.get(code, code), parts=parts))
    return out


def answer_split(row: Annotation, user, chosen: dict[str, list[str]]) -> Annotation:
    """The annotator's side(s) of each split type of their label `row`: a new revision
    with the chosen parts added to the carried set; the card's round goes on if it waited.
    Raises EvolutionError (nothing saved) when a question is unanswered or answered with a
    code that is not one of its parts, or the label is no longer waiting."""
    turn = row.turn
    study = turn.conversation.study
    group = turn.conversation.group_of(user)
    with transaction.atomic():
        # the card's state first, as a submit locks it: the two never wait on each other
        state = CardState.lock(turn, group) if group is not None else None
        locked = Annotation.objects.select_for_update().get(pk=row.pk)
        if locked.annotator_id != user.pk:
            raise EvolutionError("This label is not yours.")
        if not locked.is_current or not locked.split_pending:
            raise EvolutionError(
                "This label no longer waits for a side (already answered, or revised on "
                "the card): nothing was changed."
            )
        questions = split_questions(locked)
        codes = set(locked.codes)
        for q in questions:
            options = {t.code for t in q.parts}
            picked = list(dict.fromkeys(chosen.get(q.code) or []))
            if not picked:
                names = ", ".join(t.name for t in q.parts)
                raise EvolutionError(
                    f"“{q.name}” was split: choose at least one of {names}. Nothing was saved."
                )
            wrong = [c for c in picked if c not in options]
            if wrong:
                raise EvolutionError(
                    f"“{q.name}” was split into {', '.join(sorted(options))}, not "
                    f"{', '.join(wrong)}. Nothing was saved."
                )
            codes.update(picked)
        version = study.taxonomy_version
        by_code = version.types_by_code()
        missing = sorted(c for c in codes if c not in by_code)
        if missing:
            raise EvolutionError(f"{', '.join(missing)} is not in {version}: nothing was saved.")
        types = [by_code[c] for c in sorted(codes)]
        try:
            version.check_selection(types)
        except ValueError as e:
            raise EvolutionError(f"{e} Nothing was saved.") from None
        Annotation.objects.filter(pk=locked.pk).update(is_current=False)
        answer = Annotation.objects.create(
            turn=turn,
            annotator=user,
            round=locked.round,
            taxonomy_version=version,
            note=locked.note,
            evidence=locked.evidence,
            confidence=locked.confidence,
            source=locked.source,
            carried_from_id=locked.carried_from_id,
        )
        answer.types.set(types)
        if state is not None and state.round == locked.round:
            state.advance()
            sync_states([(state.turn_id, state.group_id)])  # the annotators' queues
    return answer
