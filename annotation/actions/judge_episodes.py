"""Judge runs on episodes (issue 22 point 3 on issue 21's episodes), through judges.py's
prepare / execute / estimate (the same budget, dry run, resume and JUDGE job as cards):

- `llm-extract`: one call per session of the run's selection (annotation/judges/
  llm_episodes.py); its answer's episodes written as the extraction run `--run NAME`
  (default the judge's pseudo-user's name, `llm-<model>@<digest6>`; source the model,
  parameters the judge run, model, prompt digest, temperature and minimum confidence)
  through the episode import's own path (importers.episodes.add_episode_records: quotes
  located, low confidence dropped, bad episodes rejected, each counted). A session is done
  once its answer is written (episodes of the run in it, or listed as answered without any
  kept); a resumed run, or a later run of the same judge and version (which writes the same
  extraction run), asks the others. A name taken by anything else is refused.
- `llm-validate --run NAME`: one call per episode of that extraction run; the verdict is
  written as the run's validator verdict (Episode.run_valid, run_invalid_reason: what the
  episode measures read as the run's own "judged" and retention, and what compare_runs
  sets beside a second model's run), a verdict given before (by the run's file) replaced
  and kept in the score's evidence; and as a JudgeScore without a type (1 valid, 0
  invalid; reason and rationale in its evidence), which marks the episode done.
- `llm-annotate --units episodes [--run NAME]`: one call per episode (of that run, else
  every episode of the selection's sessions) with the taxonomy; every type's score kept
  (JudgeScore.episode), its quotes checked against the episode's turns (an unverifiable
  one dropped and counted), and the types at or over the threshold written as the
  pseudo-user's round-1 EpisodeJudgement (valid, labels by axis; source JUDGE). The
  pseudo-user is seated as the group's judge: the measures count only the group's
  annotators, so it never votes.

Nothing of these reaches an annotator or a moderator: no page shows episodes to them yet,
and the judge's rows are a judge's (access.py)."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.db.models import Exists, OuterRef, Sum, TextField
from django.db.models.functions import Cast, Length
from django.utils import timezone

from ..importers.episodes import add_episode_records
from ..judges import llm_annotate as llm
from ..judges import llm_episodes as le
from ..models import (
    Conversation,
    Episode,
    EpisodeJudgement,
    EvidenceQuote,
    ExtractionRun,
    JudgeRun,
    JudgeRunStatus,
    JudgeScore,
    JudgeUnits,
    Source,
    Turn,
)
from .judge_base import (
    BATCH,
    ERRORS_SHOWN,
    LLM_EXTRACT,
    LLM_VALIDATE,
    JudgeRefused,
    Progress,
    Runner,
    Stop,
    chosen_types,
    open_client,
    same_judge_runs,
    settle,
    stopped,
    unit_word,
)

_EXTRA_COUNTS = (
    "episodes_read", "episodes_imported", "dropped_confidence", "rejected", "valid", "invalid",
)  # fmt: skip


def default_prompt(judge: str) -> str:
    return le.default_prompt(judge)


def version_extra(request) -> dict | None:
    """What, beyond the prompt and temperature, decides an episode judge's answers."""
    if request.units != JudgeUnits.EPISODES:
        return None
    extra = {
        "units": JudgeUnits.EPISODES,
        "max_part_chars": le.MAX_PART_CHARS,
        "max_session_chars": le.MAX_SESSION_CHARS,
    }
    if request.judge == LLM_EXTRACT:
        extra["min_confidence"] = request.min_confidence
    return extra


def check_extraction_run(run: JudgeRun, username: str) -> None:
    """The extraction run a judge on episodes writes (llm-extract) or reads, named in its
    params; JudgeRefused when it cannot be."""
    name = run.params.get("run") or ""
    if run.judge == LLM_EXTRACT:
        name = name or run.params.get("extraction_name") or username
        taken = ExtractionRun.objects.filter(study=run.study, name=name).first()
        if taken is not None and taken.parameters.get("judge") != f"{run.judge}@{run.version}":
            raise JudgeRefused(
                "run",
                f"study {run.study.slug} already has an extraction run named {name!r} (not "
                f"written by {run.judge}@{run.version}); name this one with --run",
            )
        run.params["extraction_name"] = name
        return
    run.params["extraction_run_id"] = None
    if name:
        found = ExtractionRun.objects.filter(study=run.study, name=name).first()
        if found is None:
            names = ", ".join(run.study.extraction_runs.values_list("name", flat=True)) or "none"
            raise JudgeRefused(
                "run", f"study {run.study.slug} has no extraction run {name!r} (runs: {names})"
            )
        run.params["extraction_run_id"] = found.pk


# -- what a run goes through --------------------------------------------------------------------


def _sessions(run: JudgeRun):
    conversations = Conversation.objects.visible().filter(assignments__group_id=run.group_id)
    ids = run.params.get("conversation_ids")
    return conversations if ids is None else conversations.filter(pk__in=ids)


def _extraction(run: JudgeRun) -> ExtractionRun | None:
    return ExtractionRun.objects.filter(
        study_id=run.study_id, name=run.params.get("extraction_name")
    ).first()


def _sessions_todo(run: JudgeRun, extraction: ExtractionRun | None):
    sessions = _sessions(run)
    if extraction is None:
        return sessions
    answered = extraction.parameters.get("answered_without_episodes", [])
    with_episodes = Episode.objects.filter(run=extraction, conversation_id=OuterRef("pk"))
    return sessions.exclude(Exists(with_episodes)).exclude(pk__in=answered)


def _episodes(run: JudgeRun):
    episodes = Episode.objects.filter(conversation__in=_sessions(run).values("pk"))
    if run.params.get("extraction_run_id"):
        episodes = episodes.filter(run_id=run.params["extraction_run_id"])
    return episodes


def _scored(run: JudgeRun):
    return Exists(
        JudgeScore.objects.filter(
            run__in=same_judge_runs(run).values("pk"), episode_id=OuterRef("pk")
        )
    )


# -- the dry run's estimate ---------------------------------------------------------------------


def _turn_sizes(conversation_ids) -> dict[int, dict[int, int]]:
    """{conversation: {turn index: characters of its user text, reply and reply parts}}."""
    rows = (
        Turn.objects.filter(conversation_id__in=conversation_ids)
        .annotate(
            size=Length("user_text")
            + Length("reply_text")
            + Length(Cast("reply_parts", TextField()))
        )
        .values_list("conversation_id", "index", "size")
    )
    sizes: dict[int, dict[int, int]] = defaultdict(dict)
    for conversation, index, size in rows.iterator(chunk_size=5000):
        sizes[conversation][index] = size or 0
    return sizes


def estimate(run: JudgeRun) -> dict:
    """Calls and tokens still to spend, from the stored texts' lengths (no call): one call
    per session (llm-extract) or episode; its prompt, characters / 4 of the prompt, the
    taxonomy (llm-annotate), the episode and its turns (a session's cut at
    MAX_SESSION_CHARS); its answer, a fixed guess per judge."""
    fixed = len(run.prompt_text)
    if run.judge not in (LLM_EXTRACT, LLM_VALIDATE):
        fixed += len(llm.TaxonomyText.of(run.study.taxonomy_version).text)
    prompt_tokens = 0
    if run.judge == LLM_EXTRACT:
        units = _sessions(run).count()
        todo = _sessions_todo(run, _extraction(run)).values("pk")
        sizes = (
            Turn.objects.filter(conversation_id__in=todo)
            .values("conversation_id")
            .annotate(
                size=Sum(
                    Length("user_text")
                    + Length("reply_text")
                    + Length(Cast("reply_parts", TextField()))
                )
            )
            .values_list("size", flat=True)
        )
        to_score = 0
        for size in sizes.iterator(chunk_size=5000):
            to_score += 1
            prompt_tokens += le.estimate_tokens(fixed + min(size or 0, le.MAX_SESSION_CHARS))
    else:
        episodes = _episodes(run)
        units = episodes.count()
        todo = list(
            episodes.exclude(_scored(run)).values_list(
                "conversation_id", "first_turn", "last_turn", "goal"
            )
        )
        sizes = _turn_sizes({c for c, *_ in todo})
        for conversation, first, last, goal in todo:
            turns = sizes.get(conversation, {})
            chars = sum(turns.get(i, 0) for i in range(first, last + 1))
            prompt_tokens += le.estimate_tokens(
                fixed + len(goal) + min(chars, le.MAX_SESSION_CHARS)
            )
        to_score = len(todo)
    completion = to_score * le.EXPECTED_COMPLETION_TOKENS[run.judge]
    return {
        "units": units,
        "to_score": to_score,
        "calls": to_score,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "tokens": prompt_tokens + completion,
    }


# -- the run -------------------------------------------------------------------------------------


def _session_turns(conversation_ids) -> dict[int, list[le.SessionTurn]]:
    turns: dict[int, list[le.SessionTurn]] = defaultdict(list)
    rows = Turn.objects.filter(conversation_id__in=conversation_ids).order_by("index")
    for c, i, u, r, p in rows.values_list(
        "conversation_id", "index", "user_text", "reply_text", "reply_parts"
    ):
        turns[c].append(le.SessionTurn(i, u, r, p or []))
    return turns


class _Work:
    def __init__(self, runner: Runner):
        self.runner, self.run, self.counts = runner, runner.run, runner.counts
        for name in _EXTRA_COUNTS:
            self.counts.setdefault(name, 0)
        self.counts.setdefault("notes", [])

    def note(self, lines: list[str]) -> None:
        room = ERRORS_SHOWN - len(self.counts["notes"])
        self.counts["notes"].extend(lines[: max(0, room)])


class _Extract(_Work):
    """llm-extract: a session at a time."""

    def __init__(self, runner: Runner):
        super().__init__(runner)
        run = self.run
        self.extraction = _extraction(run)
        if self.extraction is None:
            self.extraction = ExtractionRun.objects.create(
                study=run.study,
                name=run.params["extraction_name"],
                source=run.model,
                parameters={
                    "judge_run": run.pk,
                    "judge": f"{run.judge}@{run.version}",
                    "model": run.model,
                    "prompt_digest": run.prompt_digest,
                    "temperature": run.params.get("temperature", 0.0),
                    "min_confidence": run.params.get("min_confidence"),
                    "answered_without_episodes": [],
                },
            )
        self.schema = le.extract_schema()

    def plan(self) -> tuple[int, list[int]]:
        return _sessions(self.run).count(), sorted(
            _sessions_todo(self.run, self.extraction).values_list("pk", flat=True)
        )

    def batch(self, ids: list[int]) -> None:
        sessions = Conversation.objects.in_bulk(ids)
        turns = _session_turns(ids)
        for pk in ids:
            self.session(sessions[pk], turns.get(pk, []))
            self.runner.progress(self.counts["units_done"], self.counts["units_total"], "sessions")
        self.extraction.save(update_fields=["parameters"])

    def session(self, conversation: Conversation, turns: list[le.SessionTurn]) -> None:
        messages = le.extract_messages(self.run.prompt_text, turns)
        where = f"session {conversation.external_id}"
        data = self.runner.ask(messages, self.schema, le.SCHEMA_NAMES[LLM_EXTRACT], where)
        self.counts["units_done"] += 1
        if data is None:
            return
        records = [
            (n, {**episode, "conversation": conversation.key}, "")
            for n, episode in enumerate(data["episodes"][: le.MAX_EPISODES], 1)
        ]
        with transaction.atomic():
            report = add_episode_records(
                self.extraction,
                records,
                where=f"{where} answer, episode",
                min_confidence=self.run.params.get("min_confidence"),
            )
            if not report.counts["imported"]:
                self.extraction.parameters["answered_without_episodes"].append(conversation.pk)
                self.extraction.save(update_fields=["parameters"])
        c = report.counts
        self.counts["episodes_read"] += c["read"]
        self.counts["episodes_imported"] += c["imported"]
        self.counts["dropped_confidence"] += c["dropped_confidence"]
        self.counts["rejected"] += c["rejected"]
        self.counts["quotes_dropped"] += c["quotes_missing"]
        self.counts["scored"] += 1
        self.note(report.messages)


class _OnEpisodes(_Work):
    """llm-validate and llm-annotate --units episodes: an episode at a time."""

    def __init__(self, runner: Runner):
        super().__init__(runner)
        self.validate = self.run.judge == LLM_VALIDATE
        self.schema = le.validate_schema() if self.validate else runner.schema

    def plan(self) -> tuple[int, list[int]]:
        episodes = _episodes(self.run)
        todo = episodes.exclude(_scored(self.run)).values_list("pk", flat=True)
        return episodes.count(), sorted(todo)

    def batch(self, ids: list[int]) -> None:
        episodes = Episode.objects.select_related("conversation").in_bulk(ids)
        evidence = defaultdict(list)
        for e, turn, part, quote in (
            EvidenceQuote.objects.filter(episode_id__in=ids)
            .order_by("episode_id", "order", "id")
            .values_list("episode_id", "turn__index", "part", "quote")
        ):
            evidence[e].append({"turn": turn, "part": part, "quote": quote})
        turns = _session_turns({e.conversation_id for e in episodes.values()})
        for pk in ids:
            episode = episodes[pk]
            mine = [
                t
                for t in turns.get(episode.conversation_id, [])
                if episode.first_turn <= t.index <= episode.last_turn
            ]
            self.episode(episode, mine, evidence[pk])
            self.runner.progress(self.counts["units_done"], self.counts["units_total"], "episodes")

    def episode(self, episode: Episode, turns: list[le.SessionTurn], evidence: list) -> None:
        text = le.episode_text(episode.goal, episode.first_turn, episode.last_turn, evidence)
        taxonomy = "" if self.validate else self.runner.taxonomy.text
        messages = le.episode_messages(self.run.prompt_text, turns, text, taxonomy)
        where = (
            f"session {episode.conversation.external_id} episode {episode.pk} "
            f"(turns {episode.first_turn}-{episode.last_turn})"
        )
        name = le.SCHEMA_NAMES.get(self.run.judge, llm.SCHEMA_NAME)
        data = self.runner.ask(messages, self.schema, name, where)
        self.counts["units_done"] += 1
        if data is None:
            return
        with transaction.atomic():
            if self.validate:
                self.verdict(episode, data)
            else:
                self.labels(episode, data, turns)
            self.counts["scored"] += 1

    def verdict(self, episode: Episode, data: dict) -> None:
        valid = bool(data["valid"])
        reason = "" if valid else data["invalid_reason"]
        evidence = {
            "valid": valid,
            "invalid_reason": reason,
            "rationale": str(data.get("rationale", ""))[:4000],
            "replaced": {"valid": episode.run_valid, "invalid_reason": episode.run_invalid_reason},
        }
        JudgeScore.objects.create(
            run=self.run, episode=episode, type=None, score=1.0 if valid else 0.0, evidence=evidence
        )
        Episode.objects.filter(pk=episode.pk).update(run_valid=valid, run_invalid_reason=reason)
        self.counts["valid" if valid else "invalid"] += 1

    def labels(self, episode: Episode, data: dict, turns: list[le.SessionTurn]) -> None:
        runner, run = self.runner, self.run
        found = llm.read_answer(data, runner.taxonomy, [t.as_quotable() for t in turns])
        self.counts["quotes_dropped"] += found.quotes_dropped
        JudgeScore.objects.bulk_create(
            [
                JudgeScore(run=run, episode=episode, type=runner.types[code], score=s, evidence=e)
                for code, (s, e) in found.scores.items()
                if code in runner.types
            ]
        )
        labels: dict[str, list[str]] = {}
        for t in chosen_types(found.scores, runner.types, run.threshold):
            labels.setdefault(t.axis.code, []).append(t.code)
        EpisodeJudgement.objects.filter(
            episode=episode, annotator_id=run.user_id, round=1, is_current=True
        ).update(is_current=False)
        EpisodeJudgement.objects.create(
            episode=episode,
            annotator_id=run.user_id,
            group_id=run.group_id,
            round=1,
            valid=True,
            labels=labels,
            taxonomy_version=run.study.taxonomy_version,
            source=Source.JUDGE,
        )
        if labels:
            self.counts["labelled"] += 1


def execute(run: JudgeRun, progress: Progress) -> JudgeRun:
    """Judge the run's sessions or episodes still to do (see the module's docstring): DONE,
    STOPPED by its budget (resumable), or FAILED when none got an answer."""
    runner = Runner(run, progress)
    counts = runner.counts
    counts.pop("stopped", None)
    run.status, run.started_at, run.finished_at = JudgeRunStatus.RUNNING, timezone.now(), None
    runner.save()
    if not open_client(runner):
        return run
    work = _Extract(runner) if run.judge == LLM_EXTRACT else _OnEpisodes(runner)
    total, todo = work.plan()
    counts["units_total"] = total
    counts["already_scored"] = counts["units_done"] = total - len(todo)
    words = f"{unit_word(run)} judged"
    try:
        for start in range(0, len(todo), BATCH):
            work.batch(todo[start : start + BATCH])
            runner.save()
        settle(run, left=bool(todo), nothing="nothing")
    except Stop as stop:
        stopped(run, stop, words)
    finally:
        runner.client.close()
    if run.judge == LLM_VALIDATE and run.params.get("extraction_run_id"):
        extraction = ExtractionRun.objects.get(pk=run.params["extraction_run_id"])
        extraction.parameters["validator"] = {
            "judge_run": run.pk, "judge": f"{run.judge}@{run.version}", "model": run.model,
        }  # fmt: skip
        extraction.save(update_fields=["parameters"])
    run.finished_at = timezone.now()
    progress(counts["units_done"], counts["units_total"], words)
    runner.save()
    return run
