"""The agreement report page and its downloads, for the study's leads and moderators.

The page shows the latest done agreement Job of the study (the numbers are computed in the
background, never in the request) with its charts drawn as SVG on the server (annotation/
svg.py). The downloads write the same job's result: JSON as stored, CSV in long format, and
the tables as Markdown and LaTeX (annotation/agreement/render.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from ..access import get_study_for_reporter
from ..agreement import svg
from ..agreement.render import (
    TaxonomyEntry,
    Value,
    kappa_rows,
    taxonomy_table,
    to_csv,
    to_latex,
    to_markdown,
    value_of,
)
from ..models import Job, JobKind, JobStatus, Study

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


def _taxonomy(study: Study) -> tuple[dict[str, list[TaxonomyEntry]], dict[str, str]]:
    """({axis code: entries in the taxonomy's order}, {axis code: axis name})."""
    entries: dict[str, list[TaxonomyEntry]] = {}
    axis_names: dict[str, str] = {}
    for t in study.taxonomy_version.type_list():
        axis_names[t.axis.code] = t.axis.name
        entries.setdefault(t.axis.code, []).append(TaxonomyEntry(t.code, t.name, t.category.name))
    return entries, axis_names


@login_required
@require_GET
def report(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_reporter(request.user, slug)
    job = _latest_report_job(study)
    ctx: dict = {"study": study, "job": job}
    if job is not None:
        entries, axis_names = _taxonomy(study)
        ctx["stale"] = _is_stale(study, job)
        ctx["round"] = job.result.get("round", 1)
        ctx["axes"] = [
            _axis_context(axis, axis_names.get(axis, axis), data, entries.get(axis, []))
            for axis, data in job.result.get("axes", {}).items()
        ]
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
    if writer is None:
        body = json.dumps(job.result, allow_nan=False, indent=1)
    else:
        body = writer(job.result, _taxonomy(study)[0])
    response = HttpResponse(body, content_type=content_type)
    filename = f"{study.slug}-agreement-round{job.result.get('round', 1)}.{extension}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# -- one axis -----------------------------------------------------------------------------


def _axis_context(axis: str, name: str, data: Mapping, entries: list[TaxonomyEntry]) -> dict:
    report, extras = data["report"], data.get("extras", {})
    names = {e.code: e.name for e in entries}
    codes = [e.code for e in entries] + [c for c in report.get("prevalence", {}) if c not in names]
    fleiss_key = "fleiss_kappa" if report.get("fleiss_kappa") is not None else None
    if fleiss_key is None and report.get("fleiss_kappa_complete_cards") is not None:
        fleiss_key = "fleiss_kappa_complete_cards"
    headline = [
        ("Cards", value_of(report, "n_cards")),
        ("Annotators", value_of(report, "n_annotators")),
        ("Pairable cards", value_of(report, "n_pairable_cards")),
        ("Krippendorff's α (nominal)", value_of(report, "krippendorff_alpha_nominal")),
        ("Krippendorff's α (MASI)", value_of(report, "krippendorff_alpha_masi")),
        ("Percent agreement (all annotators)", value_of(report, "percent_agreement_all")),
    ]
    if fleiss_key:
        label = "Fleiss' κ" if fleiss_key == "fleiss_kappa" else "Fleiss' κ (complete cards)"
        headline.append((label, value_of(report, fleiss_key)))
    return {
        "code": axis,
        "name": name,
        "headline": headline,
        "kappa_rows": kappa_rows(report, extras),
        "pairs": _pair_rows(report, extras, codes, names),
        "per_type_chart": mark_safe(_per_type_chart(axis, report, codes, names)),
        "cooccurrence": _cooccurrence_chart(axis, extras, codes, names),
        "taxonomy": taxonomy_table(extras, entries),
        "versus": _versus_rows(data.get("versus_consensus", {}), codes, names),
        # each group's consensus in an annotator's place, on the cards several groups decided
        "between_groups": _pair_rows(data.get("between_groups", {}), {}, codes, names),
        "between_groups_cards": data.get("between_groups", {}).get("n_cards", 0),
    }


def _versus_rows(versus: Mapping, codes: Sequence[str], names: Mapping[str, str]) -> list[dict]:
    """Each annotator against the consensus: accuracy, kappa, and per type P/R/F1/kappa."""
    rows = []
    for annotator, r in versus.items():
        f1 = [v for v in r.get("f1", {}).values() if v is not None]
        rows.append(
            {
                "annotator": annotator,
                "n_cards": r.get("n_cards"),
                "accuracy": value_of(r, "accuracy"),
                "cohen_kappa": value_of(r, "cohen_kappa"),
                "macro_f1": Value(
                    sum(f1) / len(f1) if f1 else None,
                    "" if f1 else "undefined: no type has a defined F1",
                ),
                "per_label": [
                    {
                        "name": names.get(code, code),
                        **{k: _label_value(r, k, code) for k in LABEL_SCORES},
                    }
                    for code in codes
                    if code in r.get("f1", {})
                ],
            }
        )
    return rows


LABEL_SCORES = ("precision", "recall", "f1", "per_label_kappa")


def _pair_rows(
    report: Mapping, extras: Mapping, codes: Sequence[str], names: Mapping[str, str]
) -> list[dict]:
    group_of: dict[str, list[str]] = {}
    for group, keys in extras.get("pairs_by_group", {}).items():
        for key in keys:
            group_of.setdefault(key, []).append(group)
    rows = []
    for n, (key, pair) in enumerate(report.get("pairs", {}).items()):
        per_label = [
            {
                "name": names.get(code, code),
                "kappa": _label_value(pair, "per_label_kappa", code),
                "pabak": _label_value(pair, "per_label_pabak", code),
                "ac1": _label_value(pair, "per_label_ac1", code),
            }
            for code in codes
            if code in pair.get("per_label_kappa", {})
        ]
        a, b = key.split("|", 1)
        confusion = extras.get("confusion", {}).get(key)
        rows.append(
            {
                "key": key,
                "a": a,
                "b": b,
                "groups": group_of.get(key, []),
                "n_common_cards": pair.get("n_common_cards"),
                "cohen_kappa": value_of(pair, "cohen_kappa"),
                "ci": pair.get("cohen_kappa_ci"),
                "ci_reason": pair.get("cohen_kappa_ci_reason", ""),
                "percent_agreement": value_of(pair, "percent_agreement"),
                "pabak": value_of(pair, "pabak"),
                "per_label_kappa_macro": value_of(pair, "per_label_kappa_macro"),
                "per_label": per_label,
                "confusion": mark_safe(  # svg.py escapes every text
                    _confusion_chart(f"confusion-{n}", a, b, confusion, codes, names)
                )
                if confusion
                else "",
            }
        )
    return rows


def _label_value(pair: Mapping, key: str, code: str) -> Value:
    return Value(pair.get(key, {}).get(code), (pair.get(f"{key}_reason") or {}).get(code, ""))


def _per_type_chart(
    axis: str, report: Mapping, codes: Sequence[str], names: Mapping[str, str]
) -> str:
    """Per type: the mean of the pairs' defined per-label kappas, whiskers from the lowest
    to the highest pair."""
    pairs = list(report.get("pairs", {}).values())
    bars = []
    for code in codes:
        values = [p["per_label_kappa"].get(code) for p in pairs if "per_label_kappa" in p]
        defined = [v for v in values if v is not None]
        label = names.get(code, code)
        if not defined:
            reasons = {(p.get("per_label_kappa_reason") or {}).get(code, "") for p in pairs} - {""}
            note = "; ".join(sorted(reasons)) or "undefined: no pair"
            bars.append(svg.Bar(label, None, note=note))
            continue
        note = f"mean over {len(defined)} of {len(values)} pairs"
        bars.append(svg.Bar(label, sum(defined) / len(defined), min(defined), max(defined), note))
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
