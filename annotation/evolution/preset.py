"""A study on a preset's earlier version moved to the preset's latest (issue 21 point 5:
the agent-misalignment preset's outcome and resolution recast into the study's finer axes).
Each preset version after the study's is one move (the package's rules: every label carried,
nothing dropped): to the preset's own version when the study is on its parent, else (the
study derived versions of its own since) a version derived from the study's own with the
same changes (Taxonomy.load_preset's preset_evolution)."""

from __future__ import annotations

from taxonomy.models import Taxonomy, TaxonomyVersion, preset_data, preset_evolution

from ..models import Study
from .move import EvolutionError, evolve, move_study, preview, summary


def preset_of(version: TaxonomyVersion) -> TaxonomyVersion | None:
    """The preset version `version` is, or derives from (None: not of a preset)."""
    v = version
    while v is not None and v.preset_version is None:
        v = v.parent
    return v


def upgrade_plan(study: Study) -> tuple[TaxonomyVersion, list[int]]:
    """(the preset's latest version, the preset version numbers the study moves through,
    oldest first: [] when it is on the latest). EvolutionError when the study's taxonomy is
    not a preset's."""
    version = study.taxonomy_version
    slug = version.taxonomy.slug
    base = preset_of(version)
    if base is None:
        raise EvolutionError(
            f"the study's taxonomy {version} was not made from a preset: nothing to upgrade"
        )
    try:
        latest = Taxonomy.load_preset(slug)
    except ValueError as e:
        raise EvolutionError(str(e)) from None
    return latest, list(range(base.preset_version + 1, latest.preset_version + 1))


def upgrade_preview(study: Study) -> list[dict]:
    """What upgrade_study would do, one summary per move, nothing written (a study several
    preset versions behind: the first move only is counted, the later ones are named)."""
    latest, steps = upgrade_plan(study)
    out = []
    for i, number in enumerate(steps):
        target = _preset_version(study, number)
        if i:
            out.append({"to_version": f"{latest.taxonomy.slug} preset v{number}"})
        elif target is not None and target.parent_id == study.taxonomy_version_id:
            out.append(summary(study, target))
        else:
            out.append(preview(study, preset_evolution(preset_data(latest.taxonomy.slug, number))))
    return out


def _preset_version(study: Study, number: int) -> TaxonomyVersion | None:
    return TaxonomyVersion.objects.filter(
        taxonomy_id=study.taxonomy_version.taxonomy_id, preset_version=number
    ).first()


def upgrade_study(study: Study, by=None) -> list:
    """Move `study` to its preset's latest version, one move per preset version; returns
    the moves (TaxonomyMove). EvolutionError, nothing changed by the failing move, when a
    move cannot be made (labels waiting for a split side, a change the study's own version
    no longer admits)."""
    latest, steps = upgrade_plan(study)
    moves = []
    for number in steps:
        study.refresh_from_db()
        target = _preset_version(study, number)
        if target is not None and target.parent_id == study.taxonomy_version_id:
            moves.append(move_study(study, target, by))
        else:
            spec = preset_evolution(preset_data(latest.taxonomy.slug, number))
            moves.append(evolve(study, spec, by))
    return moves
