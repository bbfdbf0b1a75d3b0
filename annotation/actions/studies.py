"""Creating a study: `manage.py create_study` and the "New study" form of the studies page.
A study is created with its lead in one transaction, so it is never left without one by an
error half way (a study with no lead is a 404 for everyone but a superuser)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from taxonomy.models import PRESET_DIR, Taxonomy

from ..models import Kind, Phase, Role, Study

DEFAULT_PRESET = "interaction-smells"


def may_create_studies(user) -> bool:
    """Who may create a study in the browser (and then leads it): a user with Django's model
    permission `annotation.add_study`; a superuser has every permission. Leading a study
    gives no such right."""
    return user.is_authenticated and user.has_perm("annotation.add_study")


class StudyRefused(ValueError):
    """A study that cannot be created as asked; `field` names the input at fault (slug, name,
    taxonomy, phase, lead), the message what is wrong with it."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


def preset_names() -> list[str]:
    """The taxonomy presets a study may start from (taxonomy/presets/*.json)."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def _max_length(field: str) -> int:
    return Study._meta.get_field(field).max_length


def check_new_study(slug: str, name: str, taxonomy: str, phase: str) -> None:
    """StudyRefused for the first input that cannot make a new study."""
    try:
        validate_slug(slug)
    except ValidationError:
        raise StudyRefused(
            "slug", f"{slug!r} is not a valid slug: use letters, digits, '-' and '_' only"
        ) from None
    for field, value in (("slug", slug), ("name", name)):
        if len(value) > _max_length(field):
            raise StudyRefused(
                field, f"the {field} has {len(value)} characters: at most {_max_length(field)}"
            )
    if Study.objects.filter(slug=slug).exists():
        raise StudyRefused("slug", f"a study with slug {slug!r} already exists")
    if taxonomy not in preset_names():
        # checked against the list: the name is never a path (taxonomy/presets/<name>.json)
        raise StudyRefused(
            "taxonomy",
            f"unknown taxonomy preset {taxonomy!r} (known: {', '.join(preset_names())})",
        )
    if phase not in Phase.values:
        raise StudyRefused(
            "phase", f"unknown phase {phase!r}: choose one of {', '.join(Phase.values)}"
        )


def create_study(
    slug: str,
    *,
    lead,
    name: str = "",
    taxonomy: str = DEFAULT_PRESET,
    phase: str = Phase.CLOSED_SORT,
) -> Study:
    """A new study on version 1 of the preset `taxonomy`, with `lead` (a user, or None for a
    study with no lead yet) as its lead, an expert: all of it, or nothing."""
    check_new_study(slug, name, taxonomy, phase)
    with transaction.atomic():
        try:
            with transaction.atomic():
                version = Taxonomy.load_preset(taxonomy)
                study = Study.objects.create(
                    slug=slug, name=name or slug, taxonomy_version=version, phase=phase
                )
        except IntegrityError:
            # created by someone else since check_new_study looked
            raise StudyRefused("slug", f"a study with slug {slug!r} already exists") from None
        if lead is not None:
            study.add_member(lead, Role.LEAD, Kind.EXPERT)
    return study
