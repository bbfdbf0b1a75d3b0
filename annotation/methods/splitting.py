"""The splitting's steps of the methods section: the splitting by a model, and the split check.

- Splitting: every finished splitting job (JobKind.SPLIT) with its parameters (model,
  temperature, seed, system prompt's digest, worked examples and their digest, the endpoint's
  host, the times of its first and last request: intake/split_run.py) and counts (asked,
  answered, proposed to split, split points, dropped turns, tokens; applied: conversations
  split, parts); and from the rows, what the splitting left: the study's entries
  (intake/splitcheck/entries.population_counts, the split check's own population), the turns
  dropped, the proposals by who made them and what became of them.
- Split check: each split-check study made from this study (its cards name the study as
  their source: source_format "split_check", source_file "study SLUG") with its draw (the
  check's sample) and the latest agreement job's `split_check` (entry accuracy with its
  Wilson interval, kappa on correct / incorrect beside the full one). Its numbers count the
  check's round-1 labels: withheld, with the reason, from a reader the agreement lock of the
  check study applies to (access.agreement_locked_reason)."""

from __future__ import annotations

from ..access import agreement_locked_reason
from ..intake.splitcheck import SOURCE_FORMAT, check_of
from ..intake.splitcheck.entries import population_counts
from ..models import Conversation, Job, JobKind, JobStatus, SplitProposal, Study
from .context import Context
from .steps import Column, Step, interval, kappa, listed, n, plural, share, short, when

SPLIT_COLUMNS = (
    Column("job", "Job"),
    Column("model", "Model"),
    Column("temperature", "Temperature", "param"),
    Column("seed", "Seed", "param"),
    Column("prompt", "System prompt (SHA-256, first 12)"),
    Column("examples", "Worked examples", "count"),
    Column("asked", "Asked", "count"),
    Column("answered", "Answered", "count"),
    Column("proposed", "Proposed to split", "count"),
    Column("points", "Split points", "count"),
    Column("drops", "Turns to drop", "count"),
    Column("split", "Split", "count"),
    Column("parts", "Parts", "count"),
)


def _job(job: Job) -> dict:
    params, result = job.params, job.result
    request = result.get("request", {})
    applied = result.get("applied") or {}
    asked = "asked" in result
    return {
        "job": job.pk,
        "via": params.get("via", "page"),
        "what": params.get("what", "ask"),
        "min_turns": params.get("min_turns"),
        # a page's run names the conversations the lead chose; else every one of the set
        "chosen": len(params["conversations"])
        if isinstance(params.get("conversations"), list)
        else None,
        "model": request.get("model") or params.get("model") or None,
        "host": request.get("host"),
        "temperature": request.get("temperature", params.get("temperature")),
        "seed": request.get("seed", params.get("seed")),
        "prompt_digest": request.get("prompt_digest") or params.get("prompt_digest"),
        "examples": request.get("n_examples", len(params.get("examples") or [])),
        "examples_digest": request.get("examples_digest") or params.get("examples_digest"),
        "first_request": request.get("first_at"),
        "last_request": request.get("last_at"),
        "asked": result.get("asked") if asked else None,
        "answered": result.get("answered") if asked else None,
        "cached": result.get("cached") if asked else None,
        "skipped": result.get("n_skipped") if asked else None,
        "problems": result.get("n_errors") if asked else None,
        "proposed": result.get("split") if asked else None,
        "points": result.get("proposals") if asked else None,
        "drops": result.get("drops") if asked else None,
        "tokens": result.get("tokens"),
        "split": applied.get("conversations") if applied else None,
        "parts": applied.get("parts") if applied else None,
        "dropped_turns": applied.get("dropped_turns") if applied else None,
        "refused": applied.get("refused") if applied else None,
    }


def _proposals(study: Study) -> dict:
    rows = (
        SplitProposal.objects.filter(conversation__study=study)
        .values_list("kind", "source", "status")
        .order_by()
    )
    out: dict = {}
    for kind, source, status in rows:
        key = f"{kind}/{source}"
        out.setdefault(key, {s: 0 for s in SplitProposal.Status.values})
        out[key][status] += 1
    return dict(sorted(out.items()))


def splitting_step(ctx: Context) -> Step:
    jobs = [_job(job) for job in ctx.jobs(JobKind.SPLIT)]
    found = population_counts(ctx.study)
    dropped = SplitProposal.objects.filter(
        conversation__study=ctx.study,
        kind=SplitProposal.Kind.DROP,
        status=SplitProposal.Status.APPLIED,
    ).count()
    rows_data = {
        "entries": found.n_entries,
        "split": found.n_split,
        "parts": found.n_parts,
        "left_whole": found.n_whole,
        "dropped_turns": dropped,
    }
    data = {"jobs": jobs, "now": rows_data, "proposals": _proposals(ctx.study)}
    rows = [
        [f"job {j['job']} ({j['what']})", j["model"], j["temperature"], j["seed"],
         short(j["prompt_digest"]), j["examples"] if j["what"] != "apply" else None, j["asked"],
         j["answered"], j["proposed"], j["points"], j["drops"], j["split"], j["parts"]]
        for j in jobs
    ]  # fmt: skip
    return Step("splitting", "Splitting", _splitting_text(jobs, rows_data), SPLIT_COLUMNS,
                rows, data)  # fmt: skip


def _asked_text(j: dict) -> str:
    seed = "no seed" if j["seed"] is None else f"seed {j['seed']}"
    at = f" at {j['host']}" if j["host"] else ""
    examples = "no worked examples (zero-shot)"
    if j["examples"]:
        examples = f"{plural(j['examples'], 'worked example')} ({short(j['examples_digest'])}) "
        examples += "as few-shot messages"
    which = (
        f"the conversations of at least {j['min_turns'] or 2} turns"
        if j["chosen"] is None
        else f"{plural(j['chosen'], 'conversation')} the lead chose"
    )
    text = (
        f"Job {j['job']} asked the model {j['model'] or 'of the settings'}{at} about "
        f"{which} (temperature "
        f"{j['temperature']}, {seed}, system prompt {short(j['prompt_digest'])}, {examples}; "
        f"requests from {when(j['first_request'])} to "
        f"{when(j['last_request'])}): of {n(j['asked'])} asked ({n(j['answered'])} answered), "
        f"it proposed splitting {n(j['proposed'])}, with {plural(j['points'], 'split point')} "
        f"and {plural(j['drops'], 'off-topic turn')} to drop"
    )
    if j["split"] is not None:
        text += f"; applying them split {n(j['split'])} into {plural(j['parts'], 'part')}"
    return text + "."


def _splitting_text(jobs: list[dict], now: dict) -> str:
    said = []
    for j in jobs:
        if j["asked"] is not None:
            said.append(_asked_text(j))
        elif j["split"] is not None:
            said.append(
                f"Job {j['job']} applied the open proposals: it split {n(j['split'])} "
                f"conversations into {plural(j['parts'], 'part')}."
            )
    if not said and not now["split"] and not now["entries"]:
        return "The conversations were not split."
    said.append(
        f"The splitting left {plural(now['entries'], 'entry', 'entries')}: the "
        f"{plural(now['parts'], 'part')} of {plural(now['split'], 'split conversation')} and "
        f"{plural(now['left_whole'], 'conversation')} offered and left whole; "
        f"{plural(now['dropped_turns'], 'off-topic turn')} dropped (kept on the original, in no "
        "part)."
    )
    return " ".join(said)


# -- the split check --------------------------------------------------------------------------


CHECK_COLUMNS = (
    Column("study", "Check study"),
    Column("unit", "Unit"),
    Column("population", "Population", "count"),
    Column("n", "Drawn", "count"),
    Column("seed", "Seed", "param"),
    Column("consensus", "With a consensus", "count"),
    Column("correct", "Correct", "count"),
    Column("accuracy", "Accuracy", "share"),
    Column("accuracy_ci", "95% CI (Wilson)", "share_ci"),
    Column("kappa", "κ correct / incorrect", "number"),
    Column("kappa_full", "κ (every label)", "number"),
)


def check_studies(study: Study) -> list[Study]:
    """The split-check studies made from `study`, oldest first."""
    ids = (
        Conversation.objects.filter(source_format=SOURCE_FORMAT, source_file=f"study {study.slug}")
        .values_list("study_id", flat=True)
        .distinct()
    )
    return list(Study.objects.filter(pk__in=ids).order_by("created_at", "id"))


def _measures(check: Study) -> tuple[dict, int | None]:
    """(the latest agreement job's split_check of the check study, that job's id)."""
    job = (
        Job.objects.filter(study=check, kind=JobKind.AGREEMENT, status=JobStatus.DONE)
        .order_by("-finished_at", "-id")
        .first()
    )
    if job is None:
        return {}, None
    for axis in job.result.get("axes", {}).values():
        if axis.get("split_check"):
            return axis["split_check"], job.pk
    return {}, job.pk


def _check(ctx: Context, check: Study) -> dict:
    sample = check.samples.order_by("created_at", "id").first()
    first = Conversation.objects.filter(study=check, source_format=SOURCE_FORMAT).first()
    unit = "entries" if (check_of(first) or {}).get("unit") == "entry" else "boundaries"
    out = {
        "study": check.slug,
        "unit": unit,
        "population": sample.population if sample else None,
        "n": sample.n if sample else Conversation.objects.filter(study=check).count(),
        "seed": sample.seed if sample else None,
        "confidence": sample.confidence if sample else None,
        "margin": sample.margin if sample else None,
        "methods": sample.methods if sample else check.description,
        "annotators": sorted({u for g in Context(check).groups for u in g.annotators}),
    }
    withheld = agreement_locked_reason(ctx.user, check) if ctx.user is not None else ""
    if withheld:
        return {**out, "withheld": withheld, "agreement_job": None}
    measures, job = _measures(check)
    consensus = measures.get("consensus", {})
    binary = measures.get("binary", {}).get("group_mean", {})
    if unit == "entries":
        accuracy = {
            "correct": consensus.get("n_correct"),
            "accuracy": measures.get("entry_accuracy"),
            "accuracy_ci": measures.get("entry_accuracy_ci"),
            "kappa": binary.get("cohen_kappa"),
            "kappa_ci": binary.get("cohen_kappa_ci"),
            "kappa_full": binary.get("cohen_kappa_full"),
        }
    else:
        accuracy = {"correct": consensus.get("n_right"), "accuracy": consensus.get("accuracy")}
        accuracy.update(accuracy_ci=None, kappa=None, kappa_ci=None, kappa_full=None)
    return {**out, "agreement_job": job, "consensus": consensus.get("n_cards"), **accuracy}


def split_check_step(ctx: Context) -> Step:
    checks = [_check(ctx, check) for check in check_studies(ctx.study)]
    rows = [
        [c["study"], c["unit"], c["population"], c["n"], c["seed"], c.get("consensus"),
         c.get("correct"), c.get("accuracy"), c.get("accuracy_ci"), c.get("kappa"),
         c.get("kappa_full")]
        for c in checks
    ]  # fmt: skip
    return Step("split-check", "Split check", _check_text(checks), CHECK_COLUMNS, rows,
                {"checks": checks})  # fmt: skip


def _check_text(checks: list[dict]) -> str:
    if not checks:
        return "The splitting was not checked (no split-check study was made from this study)."
    said = []
    for c in checks:
        people = plural(len(c["annotators"]), "annotator")
        text = f"{c['methods']} {people} ({listed(c['annotators'])}) judged each card"
        text += (
            " against its original (is the entry one self-contained topic?)."
            if c["unit"] == "entries"
            else " (is the split point right?)."
        )
        if c.get("withheld"):
            text += f" Its results are withheld from you: {c['withheld']}"
        elif c["agreement_job"] is None:
            text += " No agreement was computed on it yet."
        elif c["unit"] == "entries":
            text += (
                f" Entry accuracy on the consensus: {share(c['accuracy'])} (95% Wilson interval "
                f"{interval(c['accuracy_ci'], shares=True)}; {n(c['correct'] or 0)} of "
                f"{n(c['consensus'] or 0)} entries with a consensus correct); Cohen's κ on "
                f"correct / incorrect {kappa(c['kappa'])} ({interval(c['kappa_ci'])}), over "
                f"every label {kappa(c['kappa_full'])} (job {c['agreement_job']})."
            )
        else:
            text += (
                f" Accuracy on the consensus: {share(c['accuracy'])} ({n(c['correct'] or 0)} of "
                f"{n(c['consensus'] or 0)} split points right; job {c['agreement_job']})."
            )
        said.append(text)
    return " ".join(said)
