"""A study's methods section (issue 20, point 6): one step per stage of the procedure of
TAXONOMY.md, each a short text and a table with its numbers and parameters, computed from
what the tool recorded (jobs' parameters and results, the sample, the split-check studies,
the rows), never typed in: the import, the coding filter, the splitting, the second filter,
the split check, the sample, the phases and teams, agreement, the machine judges (leads
only, and only with judge runs), the episode pipeline (with episodes) and moderation.

`methods_of(study)` gives the structured data (one object per step: steps.Step.as_dict), the
JSON of `manage.py methods --format json`; render.py writes it as Markdown and LaTeX and the
report page's Methods tab as HTML. Its agreement numbers come from the latest finished
agreement job, so they count round-1 labels: the tab is the report's, behind its lock
(access.get_study_for_reporter); a split check's results also follow the check study's lock
for the reader (`user`; None on the command line)."""

from __future__ import annotations

from django.utils import timezone

from .context import Context
from .episodes import episodes_step
from .groups import agreement_step, moderation_step, teams_step
from .intake import filter_step, import_step, sample_step, second_filter_step
from .judges import judges_step
from .splitting import split_check_step, splitting_step

STEPS = (
    import_step,
    filter_step,
    splitting_step,
    second_filter_step,
    split_check_step,
    sample_step,
    teams_step,
    agreement_step,
    judges_step,
    episodes_step,
    moderation_step,
)


def methods_of(study, user=None) -> dict:
    """The methods section of `study` as JSON-able data: {"study", "name", "generated_at",
    "steps": [{"step", "title", "text", "columns", "rows", "data"}, ...]}."""
    ctx = Context(study, user)
    return {
        "study": study.slug,
        "name": study.name,
        "generated_at": timezone.now().isoformat(),
        # a step with nothing to say to this reader is None (the judges': leads only)
        "steps": [s.as_dict() for s in (step(ctx) for step in STEPS) if s is not None],
    }
