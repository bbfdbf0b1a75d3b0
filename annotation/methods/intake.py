"""The intake's steps of the methods section: the import, the coding filter (at import or over
the study, before the splitting) and the second filter (over the study, after it), and the
sample.

- Import: every finished conversation import job (the import page's, and
  `import_conversations`, which keeps its run as one) with its files, format and counts
  (records read = imported + rejected + dropped by the filter + already imported), and the
  conversations it wrote still in the study; conversations written outside a job (the demo,
  a study load, a split check's cards) by source format and file, their rejected records not
  recorded anywhere. Parts of split conversations are no import: they are the splitting's.
- Filters: the coding filter's report of a filtered import (job.result["filter"]) and of each
  coding filter job that set conversations aside (JobKind.FILTER, params apply). A run that
  began before the splitting (context.split_moment) is the first filter, one after it the
  second. Dry runs changed nothing and are left out.
- Sample: the study's sample (intake/sampling.py) with its methods paragraph, the formula's
  numbers and the strata."""

from __future__ import annotations

from collections import defaultdict

from ..intake.coding_filter import TIOBE_MONTH, default_rules, rules_digest
from ..intake.sampling import size_for
from ..models import JobKind, SetAside
from .context import Context
from .steps import Column, Step, listed, n, plural

DEFAULT_DIGEST = rules_digest(default_rules())


# -- the import -------------------------------------------------------------------------------


def _import_jobs(ctx: Context) -> list:
    return [
        job
        for job in ctx.jobs(JobKind.IMPORT)
        if job.is_conversation_import and not job.params.get("dry_run")
    ]


IMPORT_COLUMNS = (
    Column("import", "Import"),
    Column("files", "Files"),
    Column("format", "Format"),
    Column("records", "Records read", "count"),
    Column("imported", "Imported", "count"),
    Column("rejected", "Rejected", "count"),
    Column("dropped", "Dropped by the filter", "count"),
    Column("already_imported", "Already imported", "count"),
    Column("in_study", "Conversations now", "count"),
    Column("turns", "Turns now", "count"),
)


def import_step(ctx: Context) -> Step:
    jobs = _import_jobs(ctx)
    done = {job.pk for job in jobs}
    rows_now: dict = defaultdict(lambda: {"formats": set(), "n": 0, "turns": 0})
    outside: dict = defaultdict(lambda: {"n": 0, "turns": 0})
    grouped = sorted(ctx.census.originals_by_source(), key=lambda r: (r[2], r[1]))
    for job_id, fmt, file, count, turns in grouped:
        if job_id is None:
            outside[(fmt, file)]["n"] += count
            outside[(fmt, file)]["turns"] += turns or 0
        elif job_id in done:  # an import still running or failed is no step of the study
            rows_now[job_id]["formats"].add(fmt)
            rows_now[job_id]["n"] += count
            rows_now[job_id]["turns"] += turns or 0
    imports = []
    for job in jobs:
        r, now = job.result, rows_now[job.pk]
        counts = {k: int(r.get(k) or 0) for k in ("conversations", "rejected", "dropped")}
        counts["already_imported"] = int(r.get("already_imported") or 0)
        imports.append(
            {
                "job": job.pk,
                "via": job.params.get("via", "page"),
                "files": [f.get("name", "") for f in job.params.get("files", [])],
                "format": job.params.get("format", "auto"),
                "formats": sorted(now["formats"]),
                "records": sum(counts.values()),
                "imported": counts["conversations"],
                "rejected": counts["rejected"],
                "dropped": counts["dropped"],
                "already_imported": counts["already_imported"],
                "in_study": now["n"],
                "turns": now["turns"],
            }
        )
    others = [
        {"format": fmt, "file": file, "in_study": v["n"], "turns": v["turns"]}
        for (fmt, file), v in sorted(outside.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]
    rows = [
        [f"job {i['job']} ({i['via']})", ", ".join(i["files"]), ", ".join(i["formats"])
         or i["format"], i["records"], i["imported"], i["rejected"], i["dropped"],
         i["already_imported"], i["in_study"], i["turns"]]
        for i in imports
    ]  # fmt: skip
    rows += [
        ["outside a job", o["file"], o["format"], None, None, None, None, None, o["in_study"],
         o["turns"]]
        for o in others
    ]  # fmt: skip
    totals = {
        "conversations": sum(i["in_study"] for i in imports) + sum(o["in_study"] for o in others),
        "turns": sum(i["turns"] for i in imports) + sum(o["turns"] for o in others),
        "records": sum(i["records"] for i in imports),
        "rejected": sum(i["rejected"] for i in imports),
        "dropped": sum(i["dropped"] for i in imports),
        "already_imported": sum(i["already_imported"] for i in imports),
        "files": len({f for i in imports for f in i["files"]} | {o["file"] for o in others}),
    }
    data = {"imports": imports, "outside_jobs": others, "totals": totals}
    return Step("import", "Import", _import_text(imports, others, totals), IMPORT_COLUMNS, rows,
                data)  # fmt: skip


def _import_text(imports: list, others: list, totals: dict) -> str:
    if not imports and not others:
        return "No conversation was imported."
    formats = sorted({f for i in imports for f in i["formats"]} | {o["format"] for o in others})
    text = (
        f"The study holds {plural(totals['conversations'], 'conversation')} "
        f"({plural(totals['turns'], 'turn')}) imported from {plural(totals['files'], 'file')} "
        f"(format{'s' if len(formats) != 1 else ''} {listed(formats)})."
    )
    if imports:
        text += (
            f" {plural(len(imports), 'import')} read {plural(totals['records'], 'record')}: "
            f"{n(sum(i['imported'] for i in imports))} imported, {n(totals['rejected'])} "
            f"rejected as invalid, {n(totals['dropped'])} dropped by the coding filter at "
            f"import and {n(totals['already_imported'])} already in the study."
        )
    if others:
        written = sum(o["in_study"] for o in others)
        text += (
            f" {plural(written, 'conversation')} {'was' if written == 1 else 'were'} written "
            "outside an import job (the demo, a study load or a split check's cards): the "
            "records rejected there are not recorded."
        )
    return text


# -- the coding filter ------------------------------------------------------------------------


FILTER_COLUMNS = (
    Column("run", "Run"),
    Column("rules", "Rules"),
    Column("scanned", "Scanned", "count"),
    Column("kept", "Kept", "count"),
    Column("dropped", "Dropped", "count"),
    Column("set_aside", "Set aside", "count"),
    Column("kept_assigned", "Dropped but kept (assigned)", "count"),
)


def _run(job, report: dict, at_import: bool) -> dict:
    return {
        "job": job.pk,
        "at": "import" if at_import else "study",
        "via": job.params.get("via", "page"),
        "started": job.created_at.isoformat(),
        "rules_digest": report.get("rules_digest", ""),
        "default_rules": report.get("rules_digest") == DEFAULT_DIGEST,
        "languages": [
            {"language": e["language"], "conversations": e["conversations"]}
            for e in report.get("languages", [])
        ],
        "scanned": report.get("scanned", 0),
        "kept": report.get("matched", 0),
        "dropped": report.get("dropped", 0),
        "dropped_reasons": report.get("dropped_reasons", {}),
        "set_aside": None if at_import else report.get("set_aside", 0),
        "kept_assigned": None if at_import else report.get("kept_assigned", 0),
    }


def filter_runs(ctx: Context) -> tuple[list[dict], list[dict]]:
    """(the first filter's runs, the second filter's), oldest first."""
    first, second = [], []
    moment = ctx.split_moment
    for job in _import_jobs(ctx):
        if isinstance(job.result.get("filter"), dict):
            run = _run(job, job.result["filter"], at_import=True)
            (first if moment is None or job.created_at < moment else second).append(run)
    for job in ctx.jobs(JobKind.FILTER):
        if job.params.get("apply") and isinstance(job.result.get("filter"), dict):
            run = _run(job, job.result["filter"], at_import=False)
            (first if moment is None or job.created_at < moment else second).append(run)
    key = lambda run: (run["started"], run["job"])  # noqa: E731
    return sorted(first, key=key), sorted(second, key=key)


def _rows(runs: list[dict]) -> list[list]:
    return [
        [f"job {r['job']} ({'at import' if r['at'] == 'import' else 'over the study'})",
         r["rules_digest"], r["scanned"], r["kept"], r["dropped"], r["set_aside"],
         r["kept_assigned"]]
        for r in runs
    ]  # fmt: skip


def _rules_said(runs: list[dict]) -> str:
    digests = list(dict.fromkeys(r["rules_digest"] for r in runs))
    said = []
    for digest in digests:
        run = next(r for r in runs if r["rules_digest"] == digest)
        names = [e["language"] for e in run["languages"]]
        whose = (
            f"the defaults, the top {len(names)} languages of the TIOBE index of {TIOBE_MONTH}"
            if run["default_rules"]
            else f"the study's edited rules, {plural(len(names), 'language')}"
        )
        said.append(f"rules {digest} ({whose}: {listed(names)})")
    return listed(said)


def _filtered_now(ctx: Context) -> int:
    return ctx.census.count(set_aside={SetAside.FILTERED})


def _runs_text(runs: list[dict], start: bool = True) -> str:
    parts = []
    for r in runs:
        where = "at import" if r["at"] == "import" else "over the study's conversations"
        said = f"job {r['job']} ({where}) kept {n(r['kept'])} of {n(r['scanned'])}"
        if r["set_aside"] is not None:
            said += f" and set {n(r['set_aside'])} aside"
            if r["kept_assigned"]:
                said += f" ({n(r['kept_assigned'])} dropped but kept: already assigned)"
        matched = [f"{e['language']} {n(e['conversations'])}" for e in r["languages"]]
        matched = [m for m, e in zip(matched, r["languages"], strict=True) if e["conversations"]]
        if matched:
            said += f" (conversations per language: {', '.join(matched)})"
        parts.append(said)
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:] if start else text


def filter_step(ctx: Context) -> Step:
    first, second = filter_runs(ctx)
    data = {"runs": first, "filtered_now": _filtered_now(ctx)}
    if not first:
        text = "No coding filter was run before the splitting."
    else:
        text = (
            f"Coding conversations were kept by rules ({_rules_said(first)}): a conversation "
            "is kept when its system prompt, a user message or a reply mentions one of these "
            "languages by name, abbreviation or file extension, or names it on a code fence. "
            + _runs_text(first)
        )
    return Step("filter", "Coding filter", text, FILTER_COLUMNS, _rows(first), data)


def second_filter_step(ctx: Context) -> Step:
    _, second = filter_runs(ctx)
    pool = {SetAside.NO, SetAside.SAMPLE}
    single = ctx.census.count(visible=True, set_aside=pool, size=1)
    multi = ctx.census.count(visible=True, set_aside=pool, size=2)
    data = {
        "runs": second,
        "filtered_now": _filtered_now(ctx),
        "kept_now": {"conversations": single + multi, "single_turn": single, "multi_turn": multi},
    }
    if not second:
        text = (
            "No coding filter was run after the splitting."
            if ctx.split_moment is not None
            else "No coding filter was run after a splitting (the study was not split)."
        )
    else:
        text = (
            f"After the splitting, the coding filter ran again over the study's conversations "
            f"(the parts of split conversations and those left whole) with "
            f"{_rules_said(second)}: {_runs_text(second, start=False)}"
        )
    text += (
        f" The study now holds {plural(single + multi, 'conversation')} neither split nor set "
        f"aside by a filter: {n(single)} single-turn and {n(multi)} multi-turn."
    )
    return Step("second-filter", "Second coding filter", text, FILTER_COLUMNS, _rows(second),
                data)  # fmt: skip


# -- the sample -------------------------------------------------------------------------------


SAMPLE_COLUMNS = (
    Column("stratum", "Stratum"),
    Column("population", "Population", "count"),
    Column("drawn", "Drawn", "count"),
)


def sample_step(ctx: Context) -> Step:
    samples = list(ctx.study.samples.all())
    in_set = ctx.census.count(visible=True, set_aside={SetAside.NO})
    if not samples:
        text = (
            "No sample was drawn: the study's set is every conversation kept "
            f"({plural(in_set, 'conversation')})."
        )
        return Step("sample", "Sample", text, SAMPLE_COLUMNS, [], {"in_set_now": in_set})
    sample = samples[0]
    data = {
        "population": sample.population,
        "n": sample.n,
        "seed": sample.seed,
        "confidence": sample.confidence,
        "margin": sample.margin,
        "proportion": sample.proportion,
        "min_turns": sample.min_turns,
        "stratify": list(sample.stratify),
        "strata": {k: sample.strata[k] for k in sorted(sample.strata)},
        "methods": sample.methods,
        "drawn_at": sample.created_at.isoformat(),
        "earlier_samples": len(samples) - 1,
        "in_set_now": in_set,
    }
    text = sample.methods
    if sample.confidence is not None:
        p = 0.5 if sample.proportion is None else sample.proportion  # a split check's: none
        size = size_for(sample.population, sample.confidence, sample.margin, p)
        data["formula"] = {"z": size.z, "n0": size.infinite, "n_exact": size.exact, "n": size.n}
        text += (
            " The size is Cochran's formula with the finite population correction, rounded "
            f"up: n0 = z² p (1 − p) / e² = {size.infinite:.2f} (z = {size.z:.4f}), "
            f"n = n0 / (1 + (n0 − 1) / N) = {size.exact:.2f} for N = {n(sample.population)}, "
            f"so {n(size.n)}."
        )
    if in_set != sample.n:
        text += f" The study's set holds {plural(in_set, 'conversation')} now."
    if sample.strata:
        rows = [[k, v["population"], v["drawn"]] for k, v in data["strata"].items()]
    else:
        rows = [["all", sample.population, sample.n]]
    return Step("sample", "Sample", text, SAMPLE_COLUMNS, rows, data)
