"""Machine judges' runs (issue 22, points 2 and 3): what `manage.py run_judge`, the report
page's Machine judges panel and the API's judge-runs endpoint all call.

- `prepare(study, request)`: check the request, find or make the judge's pseudo-user (one
  per judge and version: `llm-<model>@<digest6>` for an LLM judge, the digest of its prompt
  text and parameters; `det-<name>@<version>` for a detector; unusable password, inactive,
  seated as the group's judge), and return the run to go on with: the latest unfinished run
  of the same judge, version and group (resumed, with the budget now asked), else a new
  one. Its `counts["estimate"]` is the dry run's: calls and tokens from the texts' lengths,
  no call made. A dry run stops there (status PLANNED).
- `execute(run, progress)`: score the cards of the run's selection that no run of the same
  judge, version and group has scored yet (a re-run skips them; the model client's call
  cache answers what was asked before for nothing). Per card, every score (under the
  threshold too) is kept in JudgeScore with its evidence, and the labels are written as
  the pseudo-user's round-1 Annotation rows (source JUDGE; recorded, never submitted: a
  judge moves no card). Past its budget (calls, tokens) the run stops: STOPPED, saying so,
  resumed by a run of the same judge with a larger budget.
- `rethreshold(run, x)`: the labels written again from the kept scores, no call.

Labels: `llm-annotate` judges the whole taxonomy, so every card it answered gets a row (its
types at or over the threshold; none: "no smell"); a detector judges one type, so a card
gets a row only when its score passes (a row that no longer passes is retracted). A judge
that does not apply to a card writes nothing. On a single-select axis (or one with a label
limit) the highest scores are kept.

On episodes (`llm-extract`, `llm-validate`, `llm-annotate --units episodes`) prepare checks
the extraction run, and estimate and execute hand over to judge_episodes.py (same budget,
resume and job)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.db.models.functions import Length
from django.utils import timezone

from ..judges import llm_annotate as llm
from ..models import (
    Annotation,
    Conversation,
    Group,
    Job,
    JobKind,
    JobStatus,
    JudgeRun,
    JudgeRunStatus,
    JudgeScore,
    JudgeUnits,
    Seat,
    SeatRefused,
    Source,
    Study,
    Turn,
)
from .judge_base import (  # noqa: F401 - re-exported: the callers import them from here
    BATCH,
    ERRORS_SHOWN,
    LLM_ANNOTATE,
    LLM_EXTRACT,
    LLM_JUDGES,
    LLM_VALIDATE,
    MAX_PROMPT_CHARS,
    ON_EPISODES,
    JudgeRefused,
    Progress,
    Runner,
    Stop,
    chosen_types,
    detectors,
    open_client,
    same_judge_runs,
    settle,
    stopped,
    unit_word,
)


def digest_of(data) -> str:
    """SHA-256 of `data` as canonical JSON, as the model client digests a request (its
    module, and the openai SDK with it, is imported only when a run calls a model: a dry
    run never does)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def judge_names() -> list[str]:
    return [*LLM_JUDGES, *sorted(detectors())]


@dataclass
class RunRequest:
    """What a run is asked to do (the command's options, the page's form, the API's body)."""

    judge: str
    group: str = ""  # a group's name; "" the study's only group
    units: str = JudgeUnits.CARDS
    conversations: list[str] | None = None  # external ids (a file's lines)
    conversations_file: str = ""  # where they were read, for the messages
    sample: int | None = None
    seed: int = 0
    model: str = ""
    prompt: str | None = None  # None: the default prompt file
    temperature: float = 0.0
    max_calls: int | None = None
    max_tokens: int | None = None
    threshold: float = 0.5
    # an extraction run's name: llm-extract's to write (default llm-<model>@<digest6>),
    # llm-validate's to judge, llm-annotate --units episodes' to label (default: every one)
    run: str = ""
    min_confidence: float | None = None  # llm-extract: episodes under it dropped, counted

    def check(self) -> RunRequest:
        if self.judge not in judge_names():
            raise JudgeRefused(
                "judge", f"unknown judge {self.judge!r}: choose one of {', '.join(judge_names())}"
            )
        if self.units not in (JudgeUnits.CARDS, JudgeUnits.EPISODES):
            raise JudgeRefused("units", f"{self.units!r} is not cards or episodes")
        if self.judge in ON_EPISODES:
            self.units = JudgeUnits.EPISODES  # a session's episodes, an episode's verdict
        if self.units == JudgeUnits.EPISODES and self.judge not in LLM_JUDGES:
            raise JudgeRefused("units", f"detector {self.judge} labels cards, not episodes")
        if self.judge == LLM_VALIDATE and not self.run:
            raise JudgeRefused("run", "name the extraction run whose episodes to validate")
        if self.run and self.units != JudgeUnits.EPISODES:
            raise JudgeRefused("run", "an extraction run is for a judge on episodes")
        if len(self.run) > 100:
            raise JudgeRefused("run", "a run's name has at most 100 characters")
        if self.min_confidence is not None:
            if self.judge != LLM_EXTRACT:
                raise JudgeRefused("min_confidence", "only llm-extract drops by confidence")
            if not 0 <= self.min_confidence <= 1:
                raise JudgeRefused("min_confidence", f"{self.min_confidence:g} is not from 0 to 1")
        if self.conversations is not None and self.sample is not None:
            raise JudgeRefused("sample", "give a conversations file or a sample, not both")
        if self.sample is not None and self.sample < 1:
            raise JudgeRefused("sample", "at least 1 conversation")
        if not 0 <= self.temperature <= 2:
            raise JudgeRefused("temperature", f"{self.temperature:g} is not from 0 to 2")
        if not 0 <= self.threshold <= 1:
            raise JudgeRefused("threshold", f"{self.threshold:g} is not from 0 to 1")
        for name in ("max_calls", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise JudgeRefused(name, "at least 1 (or none: no limit)")
        if self.prompt is not None and not self.prompt.strip():
            raise JudgeRefused("prompt", "the prompt is empty")
        if self.prompt is not None and len(self.prompt) > MAX_PROMPT_CHARS:
            raise JudgeRefused(
                "prompt", f"{len(self.prompt)} characters: at most {MAX_PROMPT_CHARS}"
            )
        if len(self.model) > 200:
            raise JudgeRefused("model", "a model name has at most 200 characters")
        return self

    @property
    def is_llm(self) -> bool:
        return self.judge in LLM_JUDGES


def on_episodes(run: JudgeRun) -> bool:
    return run.units == JudgeUnits.EPISODES


# -- who the judge is -------------------------------------------------------------------------

_NOT_IN_USERNAME = re.compile(r"[^a-z0-9.+_-]+")


def model_slug(model: str) -> str:
    """A model's name in Django's username characters (lower case; dots kept)."""
    return _NOT_IN_USERNAME.sub("-", model.lower()).strip("-.")[:100] or "model"


def llm_version(
    judge: str, model: str, prompt: str, temperature: float, extra: dict | None = None
) -> str:
    """An LLM judge's version: the first 6 hex digits of the digest of what decides its
    answers (its prompt text and parameters; `extra`: an episode judge's own, such as its
    units and minimum confidence)."""
    what = {
        "judge": judge,
        "model": model,
        "prompt": prompt,
        "temperature": float(temperature),
        "max_answer_tokens": llm.MAX_ANSWER_TOKENS,
        "max_context_chars": llm.MAX_CONTEXT_CHARS,
        **(extra or {}),
    }
    return digest_of(what)[:6]


def judge_user(username: str):
    """The pseudo-user of a judge and version, made on first use: no usable password,
    inactive (it never logs in)."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"is_active": False})
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _group_of(study: Study, name: str) -> Group:
    groups = list(study.groups.order_by("name"))
    if name:
        found = [g for g in groups if g.name == name]
        if not found:
            names = ", ".join(g.name for g in groups) or "none"
            raise JudgeRefused(
                "group", f"study {study.slug} has no group {name!r} (groups: {names})"
            )
        return found[0]
    if len(groups) != 1:
        names = ", ".join(g.name for g in groups) or "none"
        raise JudgeRefused("group", f"name the group to judge (the study's groups: {names})")
    return groups[0]


# -- which cards ------------------------------------------------------------------------------


def _conversation_ids(group: Group, request: RunRequest) -> list[int] | None:
    """The conversations asked for (None: every one of the group's), as ids."""
    assigned = Conversation.objects.visible().filter(assignments__group=group)
    if request.conversations is not None:
        by_key = dict(
            assigned.filter(external_id__in=request.conversations).values_list("external_id", "pk")
        )
        where = request.conversations_file or "conversations"
        for line, key in enumerate(request.conversations, 1):
            if key not in by_key:
                raise JudgeRefused(
                    "conversations",
                    f"{where}:{line}: conversation {key!r} is not assigned to group {group.name!r}",
                )
        return sorted(set(by_key.values()))
    if request.sample is not None:
        ids = sorted(assigned.values_list("pk", flat=True))
        if request.sample > len(ids):
            raise JudgeRefused(
                "sample", f"{request.sample} conversations: group {group.name!r} has {len(ids)}"
            )
        return sorted(random.Random(request.seed).sample(ids, request.sample))
    return None


def _cards(run: JudgeRun):
    turns = Turn.objects.visible().filter(conversation__assignments__group_id=run.group_id)
    ids = run.params.get("conversation_ids")
    return turns if ids is None else turns.filter(conversation_id__in=ids)


def _scored(run: JudgeRun):
    """Whether a run of the same judge, version and group has scored the card (OuterRef pk)."""
    return Exists(
        JudgeScore.objects.filter(run__in=same_judge_runs(run).values("pk"), turn_id=OuterRef("pk"))
    )


# -- the run ----------------------------------------------------------------------------------


def prepare(study: Study, request: RunRequest, by=None) -> JudgeRun:
    """The run to go on with (see the module's docstring), with its estimate; JudgeRefused
    for a request that cannot be run."""
    from . import judge_episodes

    request.check()
    group = _group_of(study, request.group)
    params = {
        k: v
        for k, v in asdict(request).items()
        if k not in ("prompt", "conversations", "group", "judge", "units", "model", "threshold")
    }
    model, prompt = "", ""
    if request.is_llm:
        model = request.model or _configured_model()
        prompt = request.prompt
        if prompt is None:
            episodes = request.units == JudgeUnits.EPISODES
            prompt = (
                judge_episodes.default_prompt(request.judge) if episodes else llm.default_prompt()
            )
        extra = judge_episodes.version_extra(request)
        version = llm_version(request.judge, model, prompt, request.temperature, extra)
        username = f"llm-{model_slug(model)}@{version}"
    else:
        detector = detectors()[request.judge]
        version = str(detector.version)
        username = f"det-{request.judge}@{version}"
    params["conversation_ids"] = _conversation_ids(group, request)
    user = judge_user(username)
    try:
        group.seat(user, Seat.JUDGE)
    except SeatRefused as exc:
        raise JudgeRefused("group", str(exc)) from None
    with transaction.atomic():
        run = _resumable(study, request.judge, version, group)
        if run is None:
            run = JudgeRun(study=study, group=group, judge=request.judge, version=version)
            run.user, run.created_by = user, by
        run.units, run.model, run.threshold = request.units, model, request.threshold
        run.prompt_text, run.prompt_digest = prompt, digest_of(prompt) if prompt else ""
        run.params = {**run.params, **params}
        if run.units == JudgeUnits.EPISODES:
            judge_episodes.check_extraction_run(run, username)
        run.counts = {**run.counts, "estimate": estimate(run)}
        run.save()
    return run


def _configured_model() -> str:
    from django.conf import settings

    model = getattr(settings, "CARDSORT_LLM_MODEL", "")
    if not model:
        raise JudgeRefused("model", "no model: give one, or set CARDSORT_LLM_MODEL")
    return model


def _resumable(study: Study, judge: str, version: str, group: Group) -> JudgeRun | None:
    """The latest run of this judge, version and group that did not finish, if any; a
    run whose job is still going is refused (it goes on by itself)."""
    run = (
        JudgeRun.objects.select_for_update()
        .filter(study=study, judge=judge, version=version, group=group)
        .exclude(status=JudgeRunStatus.DONE)
        .first()
    )
    if run is None:
        return None
    job = run.job
    if run.status == JudgeRunStatus.RUNNING and job is not None and not job.is_finished:
        lost = Job.objects.lost().filter(pk=job.pk).exists()
        if not lost:
            raise JudgeRefused(
                "judge", f"run #{run.pk} of {judge}@{version} is running (job #{job.pk})"
            )
    return run


def estimate(run: JudgeRun) -> dict:
    """Calls and tokens the run would take for the cards it has still to score, from the
    stored texts' lengths (no call): one call per card; its prompt, characters / 4 of the
    system prompt, the taxonomy, the context and the card; its answer, a fixed guess.
    One query over the turns' lengths. A judge on episodes: judge_episodes.estimate."""
    if on_episodes(run):
        from . import judge_episodes

        return judge_episodes.estimate(run)
    rows = (
        _cards(run)
        .annotate(u=Length("user_text"), r=Length("reply_text"), done=_scored(run))
        .order_by("conversation_id", "index")
        .values_list("conversation_id", "u", "r", "done")
    )
    cards = todo = prompt_tokens = 0
    is_llm = run.judge == LLM_ANNOTATE
    fixed = 0
    if is_llm:
        taxonomy = llm.TaxonomyText.of(run.study.taxonomy_version)
        fixed = len(run.prompt_text) + len(taxonomy.text) + 2
    last, before = None, 0
    for conversation, u, r, done in rows.iterator(chunk_size=5000):
        if conversation != last:
            last, before = conversation, 0
        cards += 1
        if not done:
            todo += 1
            if is_llm:
                card = min(u, llm.MAX_CARD_CHARS) + min(r, llm.MAX_CARD_CHARS)
                context = min(before, llm.MAX_CONTEXT_CHARS)
                prompt_tokens += llm.estimate_tokens(fixed, context, card)
        before += u + r
    calls = todo if is_llm else 0
    completion = calls * llm.EXPECTED_COMPLETION_TOKENS
    return {
        "cards": cards,
        "to_score": todo,
        "calls": calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "tokens": prompt_tokens + completion,
    }


def start(run: JudgeRun, task, by=None) -> Job:
    """A JUDGE job for the run, queued on `task` (tasks.run_judge: the callers pass it, the
    domain never imports the tasks) once the transaction commits."""
    with transaction.atomic():
        job = Job.objects.create(
            study=run.study, kind=JobKind.JUDGE, params={"run": run.pk}, created_by=by
        )
        run.job = job
        run.status = JudgeRunStatus.RUNNING
        run.save(update_fields=["job", "status"])
        transaction.on_commit(lambda: task.delay(job.pk))
    return job


def settle_lost(study: Study) -> int:
    """Runs left running by a job that ended without them (its worker lost, the job reaped
    as failed by tasks.reap_lost_jobs, which the callers run first): stopped, saying so; the
    same judge run again resumes them."""
    lost = JudgeRun.objects.filter(
        study=study, status=JudgeRunStatus.RUNNING, job__status=JobStatus.FAILED
    ).select_related("job")
    for run in lost:
        run.status = JudgeRunStatus.STOPPED
        run.counts["stopped"] = (
            f"Its job ended before the run did ({run.job.error}); run the same judge again "
            "to resume."
        )
        run.save(update_fields=["status", "counts"])
    return len(lost)


def execute_job(job: Job, progress: Progress) -> None:
    """The JUDGE job's work: its run executed, the job finished with the run's counts (a
    run stopped by its budget is a job done: the run says it stopped), or failed."""
    run = JudgeRun.objects.select_related("study__taxonomy_version", "group").get(
        pk=job.params["run"]
    )
    run.job = job
    try:
        execute(run, progress)
    except Exception as exc:
        JudgeRun.objects.filter(pk=run.pk).update(
            status=JudgeRunStatus.FAILED, finished_at=timezone.now()
        )
        job.fail(f"{type(exc).__name__}: {exc}")
        return
    result = {"run": run.pk, "status": run.status, "summary": summary(run)}
    if run.status == JudgeRunStatus.FAILED:
        job.fail(run.counts.get("stopped", "the run failed"), result)
    else:
        job.finish(result)


# -- scoring ----------------------------------------------------------------------------------


class _Runner(Runner):
    """One pass over the run's cards (execute)."""

    def score_llm(self, card: Turn, turns: list[llm.TurnText]) -> dict | None:
        here = turns[-1]
        context = llm.context_of(turns[:-1])
        messages = llm.messages_for(self.run.prompt_text, self.taxonomy, here, context)
        where = f"{card.conversation.external_id} turn {card.index}"
        data = self.ask(messages, self.schema, llm.SCHEMA_NAME, where)
        if data is None:
            return None
        found = llm.read_answer(data, self.taxonomy, [*context, here])
        self.counts["quotes_dropped"] += found.quotes_dropped
        return found.scores

    def conversation(self, conversation: Conversation, turns: list[Turn], todo: set[int]):
        texts = [llm.TurnText(t.index, t.user_text, t.reply_text) for t in turns]
        views = None
        if self.run.judge != LLM_ANNOTATE:
            from ..judges.detectors import TurnView, detect

            views = [TurnView(i, t.user, t.reply) for i, t in enumerate(texts)]
            detected = {i: (score, ev) for i, score, ev in detect(self.detector, views)}
        for position, turn in enumerate(turns):
            turn.conversation = conversation
            if turn.pk not in todo:
                continue
            if views is None:
                scores = self.score_llm(turn, texts[: position + 1])
            else:
                scores = _detector_scores(self.detector, detected.get(position), texts)
                if scores is None:
                    self.counts["not_applicable"] += 1
            self.counts["units_done"] += 1
            if scores is None:
                continue
            with transaction.atomic():
                JudgeScore.objects.bulk_create(
                    [
                        JudgeScore(
                            run=self.run, turn=turn, type=self.types[code], score=s, evidence=e
                        )
                        for code, (s, e) in scores.items()
                        if code in self.types
                    ],
                    ignore_conflicts=True,
                )
                self.counts["scored"] += 1
                if write_labels(self.run, turn, scores, self.types):
                    self.counts["labelled"] += 1


def _detector_scores(detector, found, texts: list[llm.TurnText]) -> dict | None:
    """A detector's finding on a card as scores; its evidence's turns (positions from 0)
    as the turns' indexes."""
    if found is None:
        return None
    score, evidence = found
    turns = [texts[i].index for i in evidence.turns if 0 <= i < len(texts)]
    kept = {"turns": turns, "quotes": list(evidence.quotes), "detail": evidence.detail}
    return {detector.smell: (min(1.0, max(0.0, float(score))), kept)}


def execute(run: JudgeRun, progress: Progress | None = None) -> JudgeRun:
    """Score the run's cards still to score (see the module's docstring): DONE, or STOPPED
    by its budget (counts["stopped"] says why), or FAILED when no card got an answer."""
    progress = progress or (lambda done, total, message="": None)
    if on_episodes(run):
        from . import judge_episodes

        return judge_episodes.execute(run, progress)
    runner = _Runner(run, progress)
    counts = runner.counts
    counts.pop("stopped", None)
    cards = _cards(run)
    todo_ids = set(cards.exclude(_scored(run)).values_list("pk", flat=True))
    counts["units_total"] = cards.count()
    counts["already_scored"] = counts["units_total"] - len(todo_ids)
    counts["units_done"] = counts["already_scored"]
    run.status, run.started_at, run.finished_at = JudgeRunStatus.RUNNING, timezone.now(), None
    runner.save()
    if run.judge == LLM_ANNOTATE and not open_client(runner):
        return run
    # the conversations with a card to score, by a subquery (no list of ids in the query:
    # SQLite takes at most 32,766 parameters)
    pending = cards.exclude(_scored(run)).values_list("conversation_id", flat=True)
    ids = sorted(set(pending))
    try:
        for start in range(0, len(ids), BATCH):
            batch = Conversation.objects.in_bulk(ids[start : start + BATCH])
            turns: dict[int, list[Turn]] = {pk: [] for pk in batch}
            for turn in Turn.objects.filter(conversation_id__in=batch).order_by("index"):
                turns[turn.conversation_id].append(turn)
            for pk in sorted(batch):
                runner.conversation(batch[pk], turns[pk], todo_ids)
                progress(counts["units_done"], counts["units_total"], "cards judged")
            runner.save()
        settle(run, left=bool(todo_ids), nothing="no card")
    except Stop as stop:
        stopped(run, stop, "cards judged")
    finally:
        if runner.client is not None:
            runner.client.close()
    run.finished_at = timezone.now()
    progress(counts["units_done"], counts["units_total"], "cards judged")
    runner.save()
    return run


# -- labels -----------------------------------------------------------------------------------


def write_labels(run: JudgeRun, turn: Turn, scores: dict, types: dict) -> bool:
    """The judge's round-1 label on the card from its scores (see the module's docstring);
    True when a row with types is current afterwards."""
    chosen = chosen_types(scores, types, run.threshold)
    if not chosen and run.judge != LLM_ANNOTATE:
        Annotation.objects.filter(
            turn=turn, annotator_id=run.user_id, round=1, is_current=True
        ).update(is_current=False)
        return False
    quotes = [q for t in chosen for q in scores[t.code][1].get("quotes", [])]
    Annotation.record(
        turn=turn,
        annotator=run.user,
        types=chosen,
        round=1,
        note=f"{run.judge}@{run.version}, run {run.pk}, threshold {run.threshold:g}",
        evidence=" | ".join(quotes)[:2000],
        source=Source.JUDGE,
        taxonomy_version=run.study.taxonomy_version,
    )
    return bool(chosen)


def rethreshold(run: JudgeRun, threshold: float) -> dict:
    """The run's labels written again from its kept scores at `threshold` (no call):
    {"cards": rewritten, "labelled": with a type}."""
    if not 0 <= threshold <= 1:
        raise JudgeRefused("threshold", f"{threshold:g} is not from 0 to 1")
    if run.status in (JudgeRunStatus.PLANNED, JudgeRunStatus.RUNNING):
        raise JudgeRefused("run", f"run #{run.pk} is {run.status}: its scores are not all kept yet")
    if on_episodes(run):
        raise JudgeRefused("run", f"run #{run.pk} is on episodes: relabelling is for cards")
    types = run.study.taxonomy_version.types_by_code()
    by_card: dict[int, dict] = {}
    for turn_id, code, score, evidence in run.scores.values_list(
        "turn_id", "type__code", "score", "evidence"
    ):
        by_card.setdefault(turn_id, {})[code] = (score, evidence)
    cards = Turn.objects.select_related("conversation").in_bulk(list(by_card))
    labelled = 0
    with transaction.atomic():
        run.threshold = threshold
        run.counts = {**run.counts, "labelled": 0}
        for turn_id, scores in by_card.items():
            labelled += write_labels(run, cards[turn_id], scores, types)
        run.counts["labelled"] = labelled
        run.save(update_fields=["threshold", "counts"])
    return {"cards": len(by_card), "labelled": labelled}


def summary(run: JudgeRun) -> str:
    c = run.counts
    text = (
        f"{run.judge}@{run.version} ({run.status}): {c.get('units_done', 0)} of "
        f"{c.get('units_total', 0)} {unit_word(run)} judged "
        f"({c.get('already_scored', 0)} scored before), "
        f"{c.get('labelled', 0)} labelled, {c.get('not_applicable', 0)} not applicable, "
        f"{c.get('quotes_dropped', 0)} quotes dropped, {c.get('errors', 0)} errors; "
        f"{run.calls} calls ({c.get('cached', 0)} from the call cache), "
        f"{run.prompt_tokens + run.completion_tokens} tokens"
    )
    if run.judge == LLM_EXTRACT:
        text += (
            f"; extraction run {run.params.get('extraction_name', '?')}: "
            f"{c.get('episodes_imported', 0)} episodes written, "
            f"{c.get('dropped_confidence', 0)} dropped for confidence, "
            f"{c.get('rejected', 0)} rejected"
        )
    if c.get("stopped"):
        text += f". {c['stopped']}"
    return text


def estimate_line(run: JudgeRun) -> str:
    e = run.counts.get("estimate", {})
    units = e.get("units", e.get("cards", 0))
    return (
        f"Dry run of {run.judge}@{run.version} on group {run.group.name if run.group else '-'}: "
        f"{e.get('to_score', 0)} of {units} {unit_word(run)} to score, about "
        f"{e.get('calls', 0)} calls and {e.get('tokens', 0)} tokens "
        f"({e.get('prompt_tokens', 0)} prompt, {e.get('completion_tokens', 0)} completion); "
        "nothing was called"
    )
