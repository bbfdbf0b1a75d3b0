"""The splitting job (issue 20, point 3): ask the model about a study's conversations and,
if asked to, apply every open proposal, as the study ran it. Both `manage.py
split_conversations` and the lead's Splitting page start one (a SPLIT job);
tasks.run_split_proposals runs it in a worker, the command in its own process.

Which conversations are asked: the ones a page chose (params["conversations"]), else every
conversation of the study's set that is no part, has at least `min_turns` turns and is not
assigned to a group, in id order, at most `max` of them. No cap: they are read BATCH at a
time (their texts cut in the query), and after each batch the job keeps where it is and
its counts (job.result, "cursor"). A job whose worker or process died resumes there, and
what the dead run asked in its last batch comes back from the model client's call cache:
nothing is asked twice.

The parameters of every request (model, temperature, seed, the system prompt and its
digest, the worked examples and their digest) are job.params; job.result["request"] adds
the endpoint's host name and the times of the first and last request.

Applying (params["apply"], or a job of params["what"] == "apply"): every conversation of
the set with open proposals is split at its open points, leaving out its open dropped
turns, each in its own transaction; one that cannot be (assigned, labelled, ...) is
reported and the job goes on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models.functions import Length, Substr
from django.utils import timezone

from ..judges.client import Endpoint, ModelClient, ModelError, digest_of
from ..models import Conversation, Job, SetAside, SplitProposal, Study, Turn
from .llm import (
    ANSWER_SCHEMA,
    MAX_ANSWER_TOKENS,
    MAX_PROMPT_CHARS,
    REPLY_CHARS,
    SCHEMA_NAME,
    SYSTEM_PROMPT,
    USER_CHARS,
    TurnText,
    examples_digest,
    messages_for,
    not_proposable,
    off_reason,
    parse_answer,
    store,
)
from .splitting import SplitRefused, plan, split

BATCH = 200
ERRORS_SHOWN = 200
ASK, APPLY = "ask", "apply"
Progress = Callable[[int, int, str], None]


class ParamsError(ValueError):
    """A parameter of a splitting job that cannot be used; `field` names it."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


@dataclass
class SplitParams:
    """What a splitting job does (job.params): see the module's docstring."""

    min_turns: int = 2
    model: str = ""  # "" : CARDSORT_LLM_MODEL
    temperature: float = 0.0
    seed: int | None = None
    prompt: str = SYSTEM_PROMPT
    examples: list = field(default_factory=list)
    max: int | None = None
    apply: bool = False
    what: str = ASK
    conversations: list[int] | None = None

    def check(self) -> SplitParams:
        """Itself, or ParamsError for the first parameter out of bounds."""
        if self.min_turns < 2:
            raise ParamsError("min_turns", "at least 2 (a conversation of one turn has no split)")
        if not 0 <= self.temperature <= 2:
            raise ParamsError("temperature", f"{self.temperature:g} is not from 0 to 2")
        if self.max is not None and self.max < 1:
            raise ParamsError("max", "at least 1 (or none: every conversation)")
        if not self.prompt.strip():
            raise ParamsError("prompt", "the system prompt is empty")
        if len(self.prompt) > MAX_PROMPT_CHARS:
            raise ParamsError(
                "prompt", f"{len(self.prompt)} characters: at most {MAX_PROMPT_CHARS}"
            )
        if len(self.model) > 200:
            raise ParamsError("model", "a model name has at most 200 characters")
        return self

    def as_params(self) -> dict:
        params = {k: v for k, v in asdict(self).items() if v is not None}
        params["prompt_digest"] = digest_of(self.prompt)
        params["examples_digest"] = examples_digest(self.examples)
        return params

    @classmethod
    def from_params(cls, params: dict) -> SplitParams:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in params.items() if k in names})


def _selection(study: Study, params: SplitParams):
    if params.conversations is not None:
        return Conversation.objects.visible().filter(study=study, pk__in=params.conversations)
    return Conversation.objects.in_set().filter(
        study=study,
        split_from__isnull=True,
        n_turns__gte=params.min_turns,
        assignments__isnull=True,
    )


def _turns_of(ids: list[int]) -> dict[int, list[TurnText]]:
    """The batch's turns, their texts read only as far as they are ever sent."""
    rows = (
        Turn.objects.filter(conversation_id__in=ids)
        .order_by("conversation_id", "index")
        .annotate(
            user=Substr("user_text", 1, USER_CHARS),
            reply=Substr("reply_text", 1, REPLY_CHARS),
            user_length=Length("user_text"),
            reply_length=Length("reply_text"),
        )
        .values_list("conversation_id", "index", "user", "reply", "user_length", "reply_length")
    )
    out: dict[int, list[TurnText]] = {pk: [] for pk in ids}
    for conversation_id, *turn in rows:
        out[conversation_id].append(TurnText(*turn))
    return out


def _fresh(params: SplitParams, endpoint: Endpoint, total: int) -> dict:
    return {
        "phase": ASK,
        "cursor": 0,
        "conversations": total,
        "asked": 0,
        "answered": 0,
        "cached": 0,
        "http_requests": 0,
        "proposals": 0,
        "drops": 0,
        "split": 0,
        "parts": 0,
        "tokens": {"prompt": 0, "completion": 0},
        "errors": [],
        "n_errors": 0,
        "errors_not_shown": 0,
        "skipped": [],
        "n_skipped": 0,
        "request": {
            "model": endpoint.model,
            "temperature": params.temperature,
            "seed": params.seed,
            "prompt_digest": digest_of(params.prompt),
            "examples_digest": examples_digest(params.examples),
            "n_examples": len(params.examples),
            "host": endpoint.host,
            "first_at": None,
            "last_at": None,
        },
    }


def _error(result: dict, line: str) -> None:
    result["n_errors"] += 1
    if len(result["errors"]) < ERRORS_SHOWN:
        result["errors"].append(line)
    result["errors_not_shown"] = result["n_errors"] - len(result["errors"])


def _ask_one(client, params, conversation, turns, job, result) -> None:
    name = conversation.external_id
    result["asked"] += 1
    now = timezone.now().isoformat()
    result["request"]["first_at"] = result["request"]["first_at"] or now
    result["request"]["last_at"] = now
    before = client.calls
    try:
        answer = client.ask(
            messages_for(turns, params.prompt, params.examples),
            schema=ANSWER_SCHEMA,
            schema_name=SCHEMA_NAME,
            temperature=params.temperature,
            seed=params.seed,
            max_tokens=MAX_ANSWER_TOKENS,
        )
    except ModelError as exc:
        result["http_requests"] += client.calls - before
        _error(result, f"{name}: {exc}")
        return
    result["http_requests"] += client.calls - before
    result["answered"] += 1
    if answer.cached:
        result["cached"] += 1
    else:
        result["tokens"]["prompt"] += answer.prompt_tokens or 0
        result["tokens"]["completion"] += answer.completion_tokens or 0
    found = parse_answer(answer.data, conversation.n_turns)
    n_points, n_drops = store(conversation, found, job)
    result["proposals"] += n_points
    result["drops"] += n_drops
    if found.points or found.drops:
        result["split"] += 1
        try:
            result["parts"] += len(plan(conversation.n_turns, found.points, found.drops))
        except SplitRefused:
            pass
    for problem in found.problems:
        _error(result, f"{name}: {problem}")


def ask_all(job: Job, params: SplitParams, client: ModelClient, progress: Progress) -> dict:
    """Ask about every conversation of the job's selection after result["cursor"] (see the
    module's docstring); returns the result, kept on the job after each batch."""
    result = job.result
    selection = _selection(job.study, params).order_by("pk")
    while (done := result["asked"] + result["n_skipped"]) < result["conversations"]:
        batch = list(
            selection.filter(pk__gt=result["cursor"])[: min(BATCH, result["conversations"] - done)]
        )
        if not batch:
            break
        turns = _turns_of([c.pk for c in batch])
        for conversation in batch:
            if why := not_proposable(conversation):
                result["n_skipped"] += 1
                if len(result["skipped"]) < ERRORS_SHOWN:
                    result["skipped"].append(f"{conversation.external_id}: {why}")
            else:
                _ask_one(client, params, conversation, turns[conversation.pk], job, result)
            done = result["asked"] + result["n_skipped"]
            progress(done, result["conversations"], "conversations asked")
        result["cursor"] = batch[-1].pk
        job.result = result
        with transaction.atomic():  # where the job is, and what it considered
            job.save(update_fields=["result"])
            ids = [c.pk for c in batch]
            Conversation.objects.filter(pk__in=ids).update(split_considered_by=job)
    if params.conversations is not None:
        found = set(_selection(job.study, params).values_list("pk", flat=True))
        for pk in params.conversations:
            if pk not in found:
                _error(result, f"conversation {pk}: not in this study")
    return result


def open_candidates(study: Study):
    """The conversations of the set with open proposals: what applying splits."""
    return (
        Conversation.objects.in_set()
        .filter(study=study, split_from__isnull=True)
        .filter(split_proposals__status=SplitProposal.Status.OPEN)
        .distinct()
        .order_by("pk")
    )


def apply_all(job: Job, progress: Progress) -> dict:
    """Split every conversation of the set with open proposals at them (see the module's
    docstring), from result["applied"]["cursor"] on; returns result["applied"]."""
    applied = job.result.setdefault(
        "applied",
        {"cursor": 0, "conversations": 0, "parts": 0, "dropped_turns": 0, "refused": 0,
         "errors": [], "total": open_candidates(job.study).count(), "done": 0},
    )  # fmt: skip
    Kind, OPEN = SplitProposal.Kind, SplitProposal.Status.OPEN
    while batch := list(open_candidates(job.study).filter(pk__gt=applied["cursor"])[:BATCH]):
        open_rows = SplitProposal.objects.filter(conversation__in=batch, status=OPEN)
        by_conversation: dict[int, dict[str, list[int]]] = {}
        for pk, kind, turn in open_rows.values_list("conversation_id", "kind", "turn_index"):
            by_conversation.setdefault(pk, {Kind.SPLIT: [], Kind.DROP: []})[kind].append(turn)
        for conversation in batch:
            chosen = by_conversation.get(conversation.pk, {Kind.SPLIT: [], Kind.DROP: []})
            try:
                parts = split(
                    conversation,
                    chosen[Kind.SPLIT],
                    by=job.created_by,
                    drop_turns=chosen[Kind.DROP],
                )
            except SplitRefused as exc:
                applied["refused"] += 1
                if len(applied["errors"]) < ERRORS_SHOWN:
                    applied["errors"].append(f"{conversation.external_id}: {exc}")
            else:
                applied["conversations"] += 1
                applied["parts"] += len(parts)
                applied["dropped_turns"] += len(set(chosen[Kind.DROP]))
            applied["done"] += 1
            progress(applied["done"], applied["total"], "conversations split")
        applied["cursor"] = batch[-1].pk
        job.save(update_fields=["result"])
    return applied


# the splitting page counts the conversations a job would ask about up to this many: past it
# the page says "more than 10,000" (the job counts them all; counting 600,000 of them on the
# page took 290 ms of a 1,000,000-conversation study, the first 10,001 take 12)
ASKABLE_CAP = 10_000


def study_counts(study: Study) -> dict:
    """The splitting of a study in numbers: conversations a job would ask about (at the
    default minimum of turns; counted up to ASKABLE_CAP, `askable_capped` when there are
    more), originals split, their parts, turns dropped, and conversations with open
    proposals."""
    visible = Conversation.objects.visible().filter(study=study)
    askable = _selection(study, SplitParams()).order_by()[: ASKABLE_CAP + 1].count()
    return {
        "askable": min(askable, ASKABLE_CAP),
        "askable_capped": askable > ASKABLE_CAP,
        "askable_cap": f"{ASKABLE_CAP:,}",
        "split": visible.filter(set_aside=SetAside.SPLIT).count(),
        "parts": visible.filter(split_from__isnull=False).count(),
        "dropped_turns": SplitProposal.objects.filter(
            conversation__study=study,
            kind=SplitProposal.Kind.DROP,
            status=SplitProposal.Status.APPLIED,
        ).count(),
        "open": open_candidates(study).count(),
    }


def summary(result: dict) -> str:
    """One sentence of the job's counts, as the job's partial and the command say it."""
    text = ""
    if "asked" in result:
        text = (
            f"{result['proposals']} split point{'s' if result['proposals'] != 1 else ''} and "
            f"{result['drops']} dropped turn{'s' if result['drops'] != 1 else ''} proposed for "
            f"{result['split']} of {result['asked']} conversation"
            f"{'s' if result['asked'] != 1 else ''} asked ({result['answered']} answered, "
            f"{result['cached']} from the call cache); {result['n_skipped']} skipped, "
            f"{result['n_errors']} problem{'s' if result['n_errors'] != 1 else ''}"
        )
    if applied := result.get("applied"):
        text += "; " if text else ""
        text += (
            f"split {applied['conversations']} conversation"
            f"{'s' if applied['conversations'] != 1 else ''} into {applied['parts']} parts, "
            f"{applied['dropped_turns']} turn{'s' if applied['dropped_turns'] != 1 else ''} "
            f"dropped, {applied['refused']} refused"
        )
    return text


def execute(job: Job, progress: Progress) -> None:
    """Run (or resume) the splitting job to its end: job.finish, or job.fail saying why."""
    params = SplitParams.from_params(job.params)
    if params.what != APPLY and job.result.get("phase") != APPLY:
        endpoint = Endpoint.from_settings(params.model)
        if endpoint is None:
            job.fail(off_reason(params.model))
            return
        if "cursor" not in job.result:
            total = _selection(job.study, params).count()
            total = total if params.max is None else min(total, params.max)
            job.result = _fresh(params, endpoint, total)
            job.total = job.result["conversations"]
            job.save(update_fields=["result", "total"])
        with ModelClient(endpoint) as client:
            result = ask_all(job, params, client, progress)
        if result["asked"] and not result["answered"]:
            first = result["errors"][0] if result["errors"] else ""
            result["summary"] = summary(result)
            job.fail(f"No conversation got a usable answer from the LLM. First: {first}", result)
            return
        result["phase"] = APPLY if params.apply else "done"
        job.save(update_fields=["result"])
    if params.what == APPLY or params.apply:
        job.result.setdefault("phase", APPLY)
        apply_all(job, progress)
    job.result["phase"] = "done"
    job.result["summary"] = summary(job.result)
    job.finish(job.result)
