"""The methods section's machine judges step (issue 22 point 5): a paragraph per judge run
(its name, version, model, prompt digest and parameters, the cards it read) and its scores
against the gold with their intervals, the group's annotators on the same cards beside it,
the threshold chosen on a development split, and the runs' agreement with each other; a
table of the scores. All from the latest agreement job's `judges` section
(annotation/agreement/judge_data.py), never computed here.

Leads only, like every judge's number: for a moderator reading the report's Methods tab
the step is left out (Context.reads_judges), as it is for a study without judge runs."""

from __future__ import annotations

from collections.abc import Mapping

from ..agreement.judge_tables import ordered
from .context import Context
from .steps import Column, Step, interval, kappa, listed, plural, short

REFERENCES = {"consensus": "its group's consensus", "gold": "the study gold"}
COLUMNS = (
    Column("axis", "Axis"),
    Column("who", "Judge or annotator"),
    Column("against", "Against"),
    Column("n_cards", "Cards", "count"),
    Column("accuracy", "Exact set", "number"),
    Column("accuracy_ci", "95% CI", "ci"),
    Column("cohen_kappa", "Cohen's κ", "number"),
    Column("cohen_kappa_ci", "95% CI", "ci"),
    Column("micro_f1", "Micro F1", "number"),
    Column("micro_f1_ci", "95% CI", "ci"),
)


def judges_step(ctx: Context) -> Step | None:
    job = ctx.agreement_job
    judges = (job.result or {}).get("judges") if job is not None else None
    if not judges or not ctx.reads_judges:
        return None
    runs = {str(m["id"]): m for m in judges.get("runs", [])}
    said = [
        "Machine judges labelled the cards as judges of a group: their labels never voted and "
        "were never shown to the annotators or moderators. Each is scored against the gold "
        f"with 95% intervals from {plural(judges.get('n_boot') or 0, 'bootstrap resample')} "
        f"of the conversations (seed {judges.get('seed', 0)}), every card of the "
        "conversations a run read counted (no label: no smell), and the group's annotators "
        "on the same cards beside it."
    ]
    said += [_describe(m) for m in runs.values()]
    rows = []
    for axis, data in judges.get("axes", {}).items():
        where = f" (axis {axis})" if len(judges["axes"]) > 1 else ""
        for key, run in ordered(data.get("runs", {}), list(runs)).items():
            name = _name(runs[key])
            said.append(_scores_text(name, run, where))
            rows += _rows(axis, name, run)
        for pair in data.get("model_vs_model", []):
            a, b = _name(runs[str(pair["a"])]), _name(runs[str(pair["b"])])
            said.append(
                f"{a} and {b}{where} agreed on {plural(pair.get('n_cards', 0), 'common card')}: "
                f"exact match {kappa(pair.get('accuracy'))} {interval(pair.get('accuracy_ci'))}, "
                f"Cohen's κ {kappa(pair.get('cohen_kappa'))} "
                f"{interval(pair.get('cohen_kappa_ci'))}."
            )
    data = {"job": job.pk, "n_boot": judges.get("n_boot"), "seed": judges.get("seed"),
            "dev_share": judges.get("dev_share"), "runs": list(runs.values())}  # fmt: skip
    return Step("judges", "Machine judges", " ".join(said), COLUMNS, rows, data)


def _name(meta: Mapping) -> str:
    return f"{meta['judge']}@{meta['version']} (run {meta['id']})"


def _describe(meta: Mapping) -> str:
    parts = [f"The judge {meta['judge']}, version {meta['version']} (run {meta['id']}"]
    if meta.get("group"):
        parts[0] += f", group {meta['group']}"
    parts[0] += ")"
    if meta.get("model"):
        parts.append(f"model {meta['model']}")
    if meta.get("prompt_digest"):
        parts.append(f"prompt SHA-256 {short(meta['prompt_digest'])}")
    params = meta.get("params") or {}
    if params:
        parts.append(
            "parameters " + listed([f"{k} {params[k]}" for k in sorted(params)], empty="none")
        )
    parts.append(f"labels at a score of {meta.get('threshold')} or more")
    return ", ".join(parts) + "."


def _scores_text(name: str, run: Mapping, where: str) -> str:
    said = []
    for ref, against in REFERENCES.items():
        r = run.get(ref)
        if not r:
            continue
        text = (
            f"Against {against}{where}, {name} on {plural(r.get('n_cards', 0), 'card')}: exact "
            f"set {kappa(r.get('accuracy'))} {interval(r.get('accuracy_ci'))}, Cohen's κ "
            f"{kappa(r.get('cohen_kappa'))} {interval(r.get('cohen_kappa_ci'))}, micro F1 "
            f"{kappa(r.get('micro_f1'))} {interval(r.get('micro_f1_ci'))}, macro F1 "
            f"{kappa(r.get('macro_f1'))} {interval(r.get('macro_f1_ci'))}"
        )
        ceiling = run.get("ceiling", {}).get(ref) or {}
        if ceiling:
            beside = [
                f"{who} {kappa(h.get('micro_f1'))} {interval(h.get('micro_f1_ci'))}"
                for who, h in sorted(ceiling.items())
            ]
            text += f"; the annotators' micro F1 on the same cards: {'; '.join(beside)}"
        said.append(text + ".")
    split = run.get("dev_test")
    if split:
        test = split.get("test", {})
        chosen = [f"{c} {t:.3f}" for c, t in sorted(split["threshold"].items()) if t is not None]
        dev = plural(split["n_dev_conversations"], "development conversation")
        said.append(
            f"Thresholds chosen on {dev} (share {split['dev_share']}, seed {split['seed']}) "
            "maximising F1 per type "
            f"({listed(chosen)}), scored on the {plural(split['n_test_conversations'], 'other')}: "
            f"micro F1 {kappa(test.get('micro_f1'))} {interval(test.get('micro_f1_ci'))}."
        )
    return " ".join(said)


def _rows(axis: str, name: str, run: Mapping) -> list[list]:
    rows = []
    for ref, against in REFERENCES.items():
        r = run.get(ref)
        if not r:
            continue
        rows.append(_row(axis, name, against, r))
        for who, h in sorted((run.get("ceiling", {}).get(ref) or {}).items()):
            rows.append(_row(axis, f"{who} (annotator)", against, h))
    return rows


def _row(axis: str, who: str, against: str, r: Mapping) -> list:
    return [axis, who, against] + [r.get(c.name) for c in COLUMNS[3:]]
