"""The agreement report page and its downloads, for the study's leads and moderators.

The page shows the latest done agreement Job of the study (the numbers are computed in the
background, never in the request): the report's tables of annotation/agreement/tables.py,
the one spec every output renders (the template loops over it; the downloads CSV,
Markdown and LaTeX are annotation/agreement/render.py's), and charts drawn as SVG on the
server (annotation/charts.py) from the same numbers. JSON downloads the result as
stored."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from taxonomy.models import TaxonomyVersion

from .. import charts as svg
from ..access import get_study_for_reporter, report_result
from ..agreement.episode_tables import EPISODES
from ..agreement.judge_tables import JUDGES, ordered, run_label
from ..agreement.render import md_escape, tex_escape, to_csv, to_latex, to_markdown
from ..agreement.spec import PAGE, Table, TaxonomyEntry, pair_names, show, taxonomy_entries
from ..agreement.tables import report_spec
from ..models import Job, JobKind, JobStatus, Study
from .shared.judges_panel import panel_context as judges_panel

DOWNLOADS = {
    # fmt: (extension, content type, writer)
    "json": ("json", "application/json", None),
    "csv": ("csv", "text/csv; charset=utf-8", to_csv),
    "md": ("md", "text/markdown; charset=utf-8", to_markdown),
    "tex": ("tex", "application/x-tex; charset=utf-8", to_latex),
}
NO_LABEL = "(no label)"


def _latest_report_job(study: Study) -> Job | None:
    return (
        Job.objects.filter(study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE)
        .order_by("-finished_at", "-id")
        .first()
    )


def _version_of(study: Study, job: Job) -> TaxonomyVersion:
    """The taxonomy version the job's report was computed on (older results: the study's)."""
    pk = job.result.get("taxonomy_version_id")
    found = TaxonomyVersion.objects.filter(pk=pk).first() if pk else None
    return found or study.taxonomy_version


def _is_stale(study: Study, job: Job) -> bool:
    """Whether annotations changed since the job ran; False when the stamp is not known."""
    try:
        from ..agreement import data as agreement_data
    except ImportError:
        return False
    data_stamp = getattr(agreement_data, "data_stamp", None)
    if data_stamp is None or "data_stamp" not in job.result:
        return False
    return job.result["data_stamp"] != data_stamp(study)


@login_required
@require_GET
def report(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_reporter(request.user, slug)
    job = _latest_report_job(study)
    ctx: dict = {"study": study, "job": job, "sample": study.samples.first()}
    ctx |= judges_panel(request.user, study)  # leads only: {} for a moderator
    if job is not None:
        result = report_result(request.user, study, job.result)  # judges: the leads' only
        version = _version_of(study, job)
        ctx["old_version"] = version if version.pk != study.taxonomy_version_id else None
        entries, axis_names = taxonomy_entries(version)
        ctx["stale"] = _is_stale(study, job)
        ctx["round"] = result.get("round", 1)
        spec = report_spec(result, entries, axis_names)
        ctx["axes"] = [
            _axis_page(axis, result["axes"][axis.code], entries.get(axis.code, []))
            for axis in spec
            if axis.code != EPISODES
        ]
        ctx["episodes"] = next((_episodes_page(a) for a in spec if a.code == EPISODES), None)
        ctx["judge_scores"] = judge_panel(result, spec, entries)
        ctx["downloads"] = list(DOWNLOADS)
    return render(request, "annotation/report/page.html", ctx)


@login_required
@require_GET
def report_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    study = get_study_for_reporter(request.user, slug)
    if fmt not in DOWNLOADS:
        raise Http404("No such format")
    job = _latest_report_job(study)
    if job is None:
        raise Http404("No agreement computed yet")
    extension, content_type, writer = DOWNLOADS[fmt]
    result = report_result(request.user, study, job.result)  # judges: the leads' only
    if writer is None:
        body = json.dumps(result, allow_nan=False, indent=1)
    else:
        body = writer(result, taxonomy_entries(_version_of(study, job))[0])
        body += _sample_section(study, fmt)
    response = HttpResponse(body, content_type=content_type)
    filename = f"{study.slug}-agreement-round{job.result.get('round', 1)}.{extension}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _sample_section(study: Study, fmt: str) -> str:
    """The methods paragraph of the study's sample, after the tables of the Markdown and
    LaTeX downloads (the paper's methods section quotes it)."""
    sample = study.samples.first()
    if sample is None or fmt not in ("md", "tex"):
        return ""
    if fmt == "md":
        return f"\n## Sample\n\n{md_escape(sample.methods)}\n"
    return f"\n% sample (methods paragraph)\n{tex_escape(sample.methods)}\n"


# -- the machine judges (a lead's copy of the result only: access.report_result) -------------


def judge_panel(result: Mapping, spec, entries: Mapping) -> dict | None:
    """The judges panel (templates/annotation/judges/_scores.html): the runs, and per axis
    the judge tables of the spec (output JUDGES) and each scored run's precision-recall
    curves, the threshold chosen on the development split ringed."""
    judges = result.get("judges")
    if not judges:
        return None
    axes = []
    for axis in spec:
        data = judges.get("axes", {}).get(axis.code)
        if not data:
            continue
        names = {e.code: e.name for e in entries.get(axis.code, [])}
        blocks = [_page_table(t) for t in axis.tables if JUDGES in t.outputs and t.rows]
        axes.append(
            {"code": axis.code, "name": axis.name, "blocks": blocks,
             "curves": _pr_charts(axis.code, judges, data, names)}
        )  # fmt: skip
    return {"runs": judges.get("runs", []), "axes": axes, "dev_share": judges.get("dev_share")}


def _pr_charts(axis: str, judges: Mapping, data: Mapping, names: Mapping) -> list[dict]:
    label = {str(m["id"]): run_label(m) for m in judges.get("runs", [])}
    out = []
    for key, run in ordered(data.get("runs", {}), list(label)).items():
        chosen = (run.get("dev_test") or {}).get("threshold", {})
        for n, (code, curve) in enumerate(ordered(run.get("pr") or {}, list(names)).items()):
            if not curve["points"]:
                continue
            title = f"{label[key]}: precision-recall, {names.get(code, code)}"
            chart = svg.pr_chart(
                curve["points"],
                title=title,
                desc=f"{curve['n_positive']} of {curve['n_cards']} cards have the type.",
                id_prefix=f"pr-{axis}-{key}-{n}",
                chosen=chosen.get(code),
            )
            out.append({"title": title, "svg": mark_safe(chart)})  # svg.py escapes
    return out


# -- one axis: the spec's tables for the template, and the charts --------------------------


def _axis_page(axis, data: Mapping, entries: list[TaxonomyEntry]) -> dict:
    """The axis's tables as the template loops over them (tables.report_spec), with the
    charts drawn from the same numbers."""
    report, extras = data.get("report", {}), data.get("extras", {})
    names = {e.code: e.name for e in entries}
    codes = [e.code for e in entries] + [c for c in report.get("prevalence", {}) if c not in names]
    blocks = [_page_table(t) for t in axis.tables if PAGE in t.outputs and (t.rows or t.empty)]
    for block in blocks:
        if block["table"].id == "per-type":
            block["chart"] = mark_safe(_per_type_chart(axis.code, block["table"]))
            block["charts_after"] = True
    pairs = []
    for n, (key, pair) in enumerate(report.get("pairs", {}).items()):
        confusion = extras.get("confusion", {}).get(key)
        if confusion:
            a, b = pair_names(key, pair)
            chart = _confusion_chart(f"confusion-{n}", a, b, confusion, codes, names)
            pairs.append({"a": a, "b": b, "n": confusion["n_common_cards"], "svg": chart})
    return {
        "code": axis.code,
        "name": axis.name,
        "blocks": blocks,
        "cooccurrence": _cooccurrence_chart(axis.code, extras, codes, names),
        "confusions": [{**p, "svg": mark_safe(p["svg"])} for p in pairs],  # svg.py escapes
    }


def _episodes_page(axis) -> dict:
    """The Episodes block's tables (episode_tables.py), each co-occurrence table with its
    heat map of lifts (annotation/charts.py)."""
    blocks = [_page_table(t) for t in axis.tables if PAGE in t.outputs and (t.rows or t.empty)]
    for block in blocks:
        if block["table"].id.startswith("episode-symptom-x-"):
            block["chart"] = mark_safe(_lift_chart(block["table"]))  # charts.py escapes
    return {"code": axis.code, "name": axis.name, "blocks": blocks}


def _lift_chart(table: Table) -> str:
    """Lift (observed / expected under independence) per pair of codes; 0 where undefined."""
    at = {c.name: i for i, c in enumerate(table.columns)}
    lifts = {(r.cells[at["row"]].value, r.cells[at["col"]].value): r.cells[at["lift"]].value
             for r in table.rows}  # fmt: skip
    rows = sorted({r for r, _ in lifts})
    cols = sorted({c for _, c in lifts})
    matrix = [[round(lifts.get((r, c)) or 0.0, 2) for c in cols] for r in rows]
    return svg.heatmap(
        rows,
        cols,
        matrix,
        title=f"Lift over the gold episodes: {table.title}",
        desc="Observed co-occurrence over expected under independence; 1 = independent.",
        id_prefix=f"lift-{table.id}",
        cell_label="lift",
    )


def _prose(text: str) -> str:
    """Page prose of the spec: escaped, `code` in backticks set as code."""
    return mark_safe(re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)))


def _page_table(table: Table) -> dict:
    """The shown columns' headers and each row's cells as the page prints them: the same
    formatting as every other output; a null with its reason."""
    shown = table.shown()
    last: dict[int, str] = {}
    rows = []
    for row in table.rows:
        cells = []
        for i in shown:
            column, cell = table.columns[i], row.cells[i]
            text = show(column.kind, cell.value)
            if not column.repeat:  # shown where it changes, as a category over its types
                text, last[i] = ("" if last.get(i) == text else text), text
            null = cell.null and column.kind != "text"
            cells.append({"text": text, "null": null, "reason": cell.reason})
        # a pair's row says which pair it is (a page script or a test finds it by the key)
        key = row.name if table.id in ("pairs", "between-groups") else ""
        rows.append({"css": row.css, "cells": cells, "key": key})
    headers = [table.header(i) for i in shown]
    return {
        "table": table,
        "headers": headers,
        "rows": rows,
        "record": list(zip(headers, rows[0]["cells"], strict=True)) if table.record else [],
        "intro": _prose(table.intro),
        "note": _prose(table.note),
    }


def _per_type_chart(axis: str, table: Table) -> str:
    """Per type: the mean of the pairs' defined per-label kappas, whiskers from the lowest
    to the highest pair (the per-type table's numbers)."""
    at = {c.name: i for i, c in enumerate(table.columns)}
    n_pairs = table.totals["n_pairs"].value
    bars = []
    for row in table.rows:
        label = row.cells[at["type"]].value
        mean, lo, hi = (
            row.cells[at[k]] for k in ("pair_kappa_mean", "pair_kappa_min", "pair_kappa_max")
        )
        if mean.null:
            bars.append(svg.Bar(label, None, note=mean.reason))
            continue
        note = f"mean over {row.cells[at['n_pairs_defined']].value} of {n_pairs} pairs"
        bars.append(svg.Bar(label, mean.value, lo.value, hi.value, note))
    return svg.bar_chart(
        bars,
        title=f"Per-type Cohen's kappa, axis {axis}",
        desc="Mean of the pairs' kappas per type; whiskers from the lowest to the highest pair.",
        id_prefix=f"per-type-{axis}",
        value_label="mean κ",
        whisker_label="pairs from",
    )


def _cooccurrence_chart(
    axis: str, extras: Mapping, codes: Sequence[str], names: Mapping[str, str]
) -> dict | None:
    cooc = extras.get("cooccurrence")
    if not cooc:
        return None
    at = {c: i for i, c in enumerate(cooc["codes"])}
    order = [at[c] for c in codes if c in at]
    matrix = [[cooc["matrix"][i][j] for j in order] for i in order]
    labels = [names.get(cooc["codes"][i], cooc["codes"][i]) for i in order]
    source = "cards with a consensus" if cooc["source"] == "consensus" else "annotators' label sets"
    chart = svg.heatmap(
        labels,
        labels,
        matrix,
        title=f"Label co-occurrence over {cooc['n_sets']} {source}, axis {axis}",
        id_prefix=f"cooc-{axis}",
        cell_label="label sets",
    )
    return {"svg": mark_safe(chart), "source": source, "n_sets": cooc["n_sets"]}


def _confusion_chart(
    id_prefix: str,
    a: str,
    b: str,
    confusion: Mapping,
    codes: Sequence[str],
    names: Mapping[str, str],
) -> str:
    """Rows: a's labels, columns: b's labels, with a "(no label)" row and column for the
    cards where one of them gave nothing."""
    at = {c: i for i, c in enumerate(confusion["codes"])}
    order = [at[c] for c in codes if c in at]
    labels, a_empty, b_empty = confusion["labels"], confusion["a_empty"], confusion["b_empty"]
    matrix = [[labels[i][j] for j in order] + [b_empty[i]] for i in order]
    matrix.append([a_empty[j] for j in order] + [confusion["both_empty"]])
    axis_labels = [names.get(confusion["codes"][i], confusion["codes"][i]) for i in order]
    return svg.heatmap(
        axis_labels + [NO_LABEL],
        axis_labels + [NO_LABEL],
        matrix,
        title=f"{a} (rows) against {b} (columns) on {confusion['n_common_cards']} common cards",
        id_prefix=id_prefix,
        row_title=a,
        col_title=b,
        cell_label="cards",
    )
