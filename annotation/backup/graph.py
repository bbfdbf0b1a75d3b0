"""Which rows belong to a study, found by walking the model graph: every model of the
annotation app that reaches Study through foreign keys (directly or through a chain), with
the auto-created tables of its many-to-many fields. STUDY_MODELS names them on purpose: a
new model is a decision (does it hold ids in JSON? files?), and tests/backup fails until it
is added here. Taxonomy rows and users are shared between studies: they go by natural key
(taxonomy slug and version number, codes; usernames)."""

from __future__ import annotations

from functools import cache

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models

# Every model whose rows belong to a study, in a load order: a row's required foreign keys
# point at models listed before it (nullable ones may point anywhere: fixed up at the end).
STUDY_MODELS = (
    "annotation.Study",
    "annotation.Membership",
    "annotation.Group",
    "annotation.Group_annotators",
    "annotation.Group_judges",
    "annotation.Job",
    "annotation.Conversation",
    "annotation.Assignment",
    "annotation.Turn",
    "annotation.TaxonomyMove",
    "annotation.Annotation",
    "annotation.Annotation_types",
    "annotation.CardState",
    "annotation.Consensus",
    "annotation.Consensus_types",
    "annotation.StudyGold",
    "annotation.StudyGold_types",
    "annotation.Comment",
    "annotation.CardSkip",
    "annotation.CardTime",
    "annotation.Proposal",
    "annotation.Sample",
    "annotation.SplitProposal",
    "annotation.BoardType",
    "annotation.FreeTag",
    "annotation.TagSet",
    "annotation.TagSet_tags",
    "annotation.BoardEvent",
    "annotation.BoardVisit",
    "annotation.ExtractionRun",
    "annotation.Episode",
    "annotation.EvidenceQuote",
    "annotation.EpisodeJudgement",
    "annotation.CoverageRating",
    "annotation.EpisodeSeen",
    "annotation.EpisodeSkip",
    "annotation.EpisodeTime",
    "annotation.JudgeRun",
    "annotation.JudgeScore",
    "annotation.QueueProgress",
    "annotation.QueueCard",
)

# Rows kept from the others (annotation/models/queue.py: each annotator's cards and counts):
# never written to a study file; load_study rebuilds them from the rows it loaded.
DERIVED = ("annotation.QueueProgress", "annotation.QueueCard")

# The taxonomy's models, parents first; they are matched by natural key on load.
TAXONOMY_MODELS = (
    "taxonomy.Taxonomy",
    "taxonomy.TaxonomyVersion",
    "taxonomy.Axis",
    "taxonomy.Category",
    "taxonomy.Type",
)


def model(label: str) -> type[models.Model]:
    return apps.get_model(label)


def label(model_class) -> str:
    return model_class._meta.label


def fields(model_class) -> list[models.Field]:
    """The stored fields of a row but its primary key, in declaration order."""
    return [f for f in model_class._meta.concrete_fields if not f.primary_key]


def reaches_study(model_class, seen: frozenset = frozenset()) -> bool:
    study = apps.get_model("annotation", "Study")
    if model_class is study:
        return True
    for f in fields(model_class):
        target = f.related_model if f.is_relation else None
        if target is None or target in seen or target is model_class:
            continue
        if reaches_study(target, seen | {model_class}):
            return True
    return False


def discovered_study_models() -> set[str]:
    """Every installed model (auto-created many-to-many tables too) that reaches Study."""
    return {
        label(m)
        for m in apps.get_models(include_auto_created=True)
        if not m._meta.proxy and reaches_study(m)
    }


@cache
def scope_path(label_: str) -> str:
    """The lookup from a model to its study's id through required foreign keys, shortest
    first: every row of the study is reached by it ("study_id", "turn__conversation__study")."""
    study = apps.get_model("annotation", "Study")
    start = model(label_)
    if start is study:
        return "pk"
    queue: list[tuple[type, list[str]]] = [(start, [])]
    visited = {start}
    while queue:
        current, path = queue.pop(0)
        for f in fields(current):
            if not f.is_relation or f.null:
                continue
            if f.related_model is study:
                return "__".join([*path, f.name])
            if f.related_model not in visited:
                visited.add(f.related_model)
                queue.append((f.related_model, [*path, f.name]))
    raise LookupError(f"{label_} reaches no study through required foreign keys")


def user_model_label() -> str:
    return label(get_user_model())
