"""The report page's Machine judges panel, shared by the report page and the panel's own
views (views/judges.py): the study's runs and the form that starts one. Leads only, and not
while the agreement lock applies to them (access.judges_visible_to): {} for anyone else."""

from __future__ import annotations

from django import forms

from ...access import judges_visible_to
from ...actions.judges import RunRequest, judge_names, settle_lost
from ...models import JudgeRunStatus, Study
from ...tasks import reap_lost_jobs

PANEL = "annotation/judges/_panel.html"
RUNS_SHOWN = 20


class JudgeRunForm(forms.Form):
    judge = forms.ChoiceField()
    group = forms.ChoiceField()
    units = forms.ChoiceField(
        required=False,
        choices=[("cards", "cards"), ("episodes", "episodes")],
        initial="cards",
        help_text="llm-extract and llm-validate work on episodes",
    )
    run = forms.CharField(
        required=False,
        max_length=100,
        label="Extraction run",
        help_text="llm-extract's to write, llm-validate's to judge, llm-annotate's to label",
    )
    min_confidence = forms.FloatField(
        required=False, min_value=0, max_value=1, help_text="llm-extract: drop episodes under it"
    )
    sample = forms.IntegerField(required=False, min_value=1, help_text="conversations")
    seed = forms.IntegerField(required=False, initial=0)
    model = forms.CharField(required=False, max_length=200)
    max_calls = forms.IntegerField(required=False, min_value=1)
    max_tokens = forms.IntegerField(required=False, min_value=1)
    threshold = forms.FloatField(initial=0.5, min_value=0, max_value=1)
    dry_run = forms.BooleanField(required=False, initial=True, label="Dry run (estimate only)")

    def __init__(self, study: Study, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["judge"].choices = [(n, n) for n in judge_names()]
        self.fields["group"].choices = [(g, g) for g in study.groups.values_list("name", flat=True)]

    def request(self) -> RunRequest:
        data = self.cleaned_data
        return RunRequest(
            judge=data["judge"],
            group=data["group"],
            units=data["units"] or "cards",
            run=data["run"].strip(),
            min_confidence=data["min_confidence"],
            sample=data["sample"],
            seed=data["seed"] or 0,
            model=data["model"].strip(),
            max_calls=data["max_calls"],
            max_tokens=data["max_tokens"],
            threshold=data["threshold"],
        )


def panel_context(user, study: Study, form: JudgeRunForm | None = None) -> dict:
    """What the panel shows `user` ({} for anyone who may not see machine judges)."""
    if not judges_visible_to(user, study):
        return {}
    reap_lost_jobs()
    settle_lost(study)
    runs = list(study.judge_runs.select_related("group", "job", "user")[:RUNS_SHOWN])
    return {
        "judges_panel": True,
        "judge_runs": runs,
        "judge_form": form or JudgeRunForm(study),
        "judges_going": any(r.status == JudgeRunStatus.RUNNING for r in runs),
    }
