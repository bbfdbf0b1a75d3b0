"""What the judge runs on cards (judges.py) and on episodes (judge_episodes.py) share: the
judges' names, the refusal, the run's pass (Runner: counts, budget, errors, model calls),
the model client's opening and the label choice from scores. judges.py re-exports the names
its callers use."""

from __future__ import annotations

from collections.abc import Callable

from django.utils import timezone

from taxonomy.models import when_error

from ..judges import llm_annotate as llm
from ..models import JudgeRun, JudgeRunStatus

LLM_ANNOTATE = "llm-annotate"
LLM_EXTRACT = "llm-extract"
LLM_VALIDATE = "llm-validate"
LLM_JUDGES = (LLM_ANNOTATE, LLM_EXTRACT, LLM_VALIDATE)
ON_EPISODES = (LLM_EXTRACT, LLM_VALIDATE)  # they work on sessions and episodes only
BATCH = 100  # conversations read at a time
ERRORS_SHOWN = 50
MAX_PROMPT_CHARS = 50_000
Progress = Callable[[int, int, str], None]


class JudgeRefused(ValueError):
    """A judge run that cannot be done as asked; `field` names the parameter at fault."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


def detectors() -> dict:
    """The rule-based detectors by name (annotation/judges/detectors), {} without them."""
    try:
        from ..judges.detectors import REGISTRY
    except ImportError:
        return {}
    return dict(REGISTRY)


def same_judge_runs(run: JudgeRun):
    return JudgeRun.objects.filter(
        study_id=run.study_id, judge=run.judge, version=run.version, group_id=run.group_id
    )


COUNTS = (
    "units_total", "units_done", "already_scored", "scored", "labelled", "not_applicable",
    "quotes_dropped", "cached", "errors",
)  # fmt: skip


class Stop(Exception):
    """The run's budget is spent."""


class Runner:
    """A run's pass: its counts, budget, errors and model calls (judges._Runner goes over
    cards, judge_episodes over sessions and episodes)."""

    def __init__(self, run: JudgeRun, progress: Progress):
        self.run, self.progress = run, progress
        self.version = run.study.taxonomy_version
        self.types = self.version.types_by_code()
        self.counts = run.counts
        for name in COUNTS:
            self.counts.setdefault(name, 0)
        self.counts.setdefault("error_lines", [])
        self.client = None  # a ModelClient, for an LLM judge
        if run.judge in LLM_JUDGES:
            self.taxonomy = llm.TaxonomyText.of(self.version)
            self.schema = self.taxonomy.schema()
        else:
            self.detector = detectors()[run.judge]

    def over_budget(self) -> str:
        run, params = self.run, self.run.params
        if params.get("max_calls") and run.calls >= params["max_calls"]:
            return f"its budget of {params['max_calls']} calls is spent ({run.calls} made)"
        tokens = run.prompt_tokens + run.completion_tokens
        if params.get("max_tokens") and tokens >= params["max_tokens"]:
            return f"its budget of {params['max_tokens']} tokens is spent ({tokens} used)"
        return ""

    def error(self, line: str) -> None:
        self.counts["errors"] += 1
        if len(self.counts["error_lines"]) < ERRORS_SHOWN:
            self.counts["error_lines"].append(line)

    def ask(self, messages: list[dict], schema: dict, schema_name: str, where: str):
        """The model's parsed answer, its calls and tokens counted (a cached one costs
        nothing); None (an error counted, naming `where`) when it gave none. _Stop past
        the budget, before the call."""
        from ..judges.client import ModelError

        if why := self.over_budget():
            raise Stop(why)
        before = self.client.calls
        try:
            answer = self.client.ask(
                messages,
                schema=schema,
                schema_name=schema_name,
                temperature=self.run.params.get("temperature", 0.0),
                max_tokens=llm.MAX_ANSWER_TOKENS,
            )
        except ModelError as exc:
            self.run.calls += self.client.calls - before
            self.error(f"{where}: {exc}")
            return None
        self.run.calls += self.client.calls - before
        if answer.cached:
            self.counts["cached"] += 1
        else:
            self.run.prompt_tokens += answer.prompt_tokens or 0
            self.run.completion_tokens += answer.completion_tokens or 0
        return answer.data

    def save(self) -> None:
        self.run.counts = self.counts
        self.run.save(
            update_fields=["counts", "calls", "prompt_tokens", "completion_tokens", "status",
                           "finished_at", "started_at", "job"]
        )  # fmt: skip


def open_client(runner: Runner) -> bool:
    """The runner's model client from the settings; False (the run FAILED, saying what to
    set) when the client is off."""
    from ..judges.client import Endpoint, ModelClient, missing_settings

    run = runner.run
    endpoint = Endpoint.from_settings(run.model)
    if endpoint is None:
        runner.counts["stopped"] = "the model client is off: set " + " and ".join(
            missing_settings(run.model)
        )
        run.status, run.finished_at = JudgeRunStatus.FAILED, timezone.now()
        runner.save()
        return False
    runner.client = ModelClient(endpoint)
    return True


def chosen_types(scores: dict, types: dict, threshold: float) -> list:
    """The types whose score is at or over the threshold, within each axis's label limit
    (the highest scores kept)."""
    passing = sorted(
        ((s, code) for code, (s, _) in scores.items() if s >= threshold and code in types),
        key=lambda x: (-x[0], x[1]),
    )
    per_axis: dict[int, int] = {}
    chosen = []
    for _, code in passing:
        t = types[code]
        axis = t.axis
        limit = axis.max_labels if axis.multi_select else 1
        if limit and per_axis.get(axis.pk, 0) >= limit:
            continue
        per_axis[axis.pk] = per_axis.get(axis.pk, 0) + 1
        chosen.append(t)
    # an axis labelled only under a condition (Axis.when) keeps its types when it holds
    labels: dict[str, list[str]] = {}
    for t in chosen:
        labels.setdefault(t.axis.code, []).append(t.code)
    return [t for t in chosen if not when_error(t.axis.code, t.axis.name, t.axis.when, labels)]


def unit_word(run: JudgeRun) -> str:
    """What a run goes through: cards, sessions (llm-extract) or episodes."""
    return run.unit_word


def settle(run: JudgeRun, *, left: bool, nothing: str) -> None:
    """A pass that ended without running out of budget: done, or failed when work was left
    (`left`) and errors came back but no score (`nothing`: what got no usable answer)."""
    counts = run.counts
    run.status = JudgeRunStatus.DONE
    if counts["errors"] and not counts["scored"] and left:
        run.status = JudgeRunStatus.FAILED
        first = counts["error_lines"][0] if counts["error_lines"] else ""
        counts["stopped"] = f"{nothing} got a usable answer. First: {first}"


def stopped(run: JudgeRun, stop: Stop, words: str) -> None:
    """A pass its budget stopped: resumable with a larger one."""
    counts = run.counts
    run.status = JudgeRunStatus.STOPPED
    counts["stopped"] = (
        f"Stopped: {stop}; {counts['units_done']} of {counts['units_total']} {words}. "
        "Run the same judge again with a larger budget to resume."
    )
