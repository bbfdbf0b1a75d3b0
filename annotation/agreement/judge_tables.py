"""The "Machine judges" tables of an axis (the result's `judges` section, judge_data.py),
in the report's one spec (spec.py): the downloads (CSV, Markdown, LaTeX, the command's
summary) print them under the axis, the page in its judges panel (output JUDGES, never the
axis's blocks), both from the same Tables. They exist only in a lead's copy of the result
(access.report_result removes the section from anyone else's).

CSV scopes: "judge" (a run against a reference: `name` the run, e.g. "code-rollback@1
(run 4)", the row's scope "judge-consensus" or "judge-gold"), "judge-ceiling" (an annotator
beside a run: `name` "run|annotator"), "judge-per-type", "judge-models" (two runs: `name`
"run a|run b") and its per-type kappas, "judge-threshold" (per type: the threshold chosen on
the development conversations, its F1 there, and the test scores), "judge-pr" (the curve:
one row per point, `statistic` precision or recall, `label` the type, `name` the run and
the threshold)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .spec import COUNT, CSV, KAPPA, MD, TEX, TEXT, Cell, Column, Row, Table, TaxonomyEntry, cells
from .spec import label_cell as _label_cell
from .versus_tables import TYPE_SCORES, _ci

JUDGES = "judges"  # the page's judges panel (not an axis block)
MAIN = frozenset({JUDGES, CSV, MD, TEX, TEXT})
DETAIL = frozenset({JUDGES, CSV, MD})
REFERENCES = {"consensus": "its group's consensus", "gold": "the study gold"}

SCORES = (
    Column("who", "Judge or annotator", "text"),
    Column("reference", "Against", "text"),
    Column("n_cards", "Cards", COUNT, text="{} cards"),
    Column("n_conversations", "Conversations", COUNT, optional=True),
    Column("accuracy", "Exact set", text="exact set {}"),
    _ci("accuracy"),
    KAPPA,
    _ci("cohen_kappa"),
    Column("macro_f1", "Macro F1", text="macro F1 {}"),
    _ci("macro_f1"),
    Column("micro_f1", "Micro F1", text="micro F1 {}"),
    _ci("micro_f1"),
)
PER_TYPE = (
    Column("type", "Type", "text"),
    Column("support", "Support", COUNT),
    *TYPE_SCORES,
)
MODELS = (
    Column("a", "Judge A", "text"),
    Column("b", "Judge B", "text"),
    Column("n_cards", "Common cards", COUNT, text="{} common cards"),
    Column("accuracy", "Exact match", text="exact match {}"),
    _ci("accuracy"),
    KAPPA,
    _ci("cohen_kappa"),
)
MODEL_TYPES = (
    Column("type", "Type", "text"),
    Column("per_label_kappa", "κ"),
    _ci("per_label_kappa"),
)
THRESHOLD = (
    Column("type", "Type", "text"),
    Column("threshold", "Threshold (dev)"),
    Column("dev_f1", "F1 (dev)"),
    Column("support", "Support (test)", COUNT),
    Column("precision", "Precision (test)"),
    _ci("precision"),
    Column("recall", "Recall (test)"),
    _ci("recall"),
    Column("f1", "F1 (test)"),
    _ci("f1"),
)
PR = (Column("type", "Type", "text"), Column("precision", "Precision"), Column("recall", "Recall"))


def run_label(meta: Mapping) -> str:
    return f"{meta['judge']}@{meta['version']} (run {meta['id']})"


def judge_tables(
    judges: Mapping | None, axis: str, entries: Sequence[TaxonomyEntry]
) -> list[Table]:
    """The axis's judge tables; none without a judges section."""
    data = (judges or {}).get("axes", {}).get(axis)
    if not data:
        return []
    names = {e.code: e.name for e in entries}
    meta = {str(m["id"]): m for m in judges.get("runs", [])}
    label = {key: run_label(m) for key, m in meta.items()}
    # the runs in their order (oldest first), the types in the taxonomy's: a stored result's
    # keys come back reordered from PostgreSQL's jsonb
    runs = ordered(data["runs"], list(meta))
    codes = [e.code for e in entries]
    out = [scores_table(runs, label, judges)]
    for key, run in runs.items():
        for ref in REFERENCES:
            if run.get(ref):
                out.append(per_type_table(label[key], ref, run[ref], names, codes))
        if run.get("dev_test"):
            out.append(threshold_table(label[key], run["dev_test"], names, codes))
        if run.get("pr"):
            out.append(pr_table(label[key], ordered(run["pr"], codes)))
    if data.get("model_vs_model"):
        out.append(models_table(data["model_vs_model"], label))
        for pair in data["model_vs_model"]:
            out.append(model_types_table(pair, label, names, codes))
    return out


def ordered(mapping: Mapping, order: Sequence[str]) -> dict:
    """`mapping` with the keys of `order` first, in that order, then the others sorted."""
    first = [k for k in order if k in mapping]
    return {k: mapping[k] for k in first + sorted(set(mapping) - set(first))}


def scores_table(runs: Mapping, label: Mapping, judges: Mapping) -> Table:
    rows = []
    for key, run in runs.items():
        for ref, against in REFERENCES.items():
            report = run.get(ref)
            if not report:
                continue
            who = label[key]
            rows.append(
                Row(
                    cells(report, SCORES, who=Cell(who), reference=Cell(against)),
                    name=who,
                    scope=f"judge-{ref}",
                    text=f"{who} against {against}",
                    css="judge",
                )
            )
            for human, r in sorted(run["ceiling"].get(ref, {}).items()):
                rows.append(
                    Row(
                        cells(r, SCORES, who=Cell(f"{human} (annotator)"), reference=Cell(against)),
                        name=f"{who}|{human}",
                        scope="judge-ceiling",
                        text=f"  beside it, annotator {human}",
                        css="ceiling",
                    )
                )
    note = (
        "A judge is never a voter: its labels are scored against the gold, with the group's "
        "annotators on the same cards beside it (the ceiling). Intervals: bootstrap 95% "
        f"percentile intervals resampling conversations ({judges.get('n_boot', 0)} "
        f"resamples, seed {judges.get('seed', 0)}). A run's cards: every card of the "
        "conversations it read; where it wrote nothing, it said no smell."
    )
    return Table(
        "judge-scores",
        "Machine judges against the gold, the annotators beside them",
        "judge",
        SCORES,
        tuple(rows),
        outputs=MAIN,
        note=note,
    )


def _type_rows(section: Mapping, columns, names, codes, name: str, present: str, **given) -> tuple:
    return tuple(
        Row(
            tuple(
                Cell(names.get(code, code))
                if c.name == "type"
                else given[c.name](code)
                if c.name in given
                else _label_cell(section, c.name, code)
                for c in columns
            ),
            name=name,
            label=code,
            text=code,
        )
        for code in ordered(section.get(present) or {}, codes)
    )


def per_type_table(who: str, ref: str, report: Mapping, names: Mapping, codes) -> Table:
    title = f"{who} against {REFERENCES[ref]}: per type"
    rows = _type_rows(
        report, PER_TYPE, names, codes, who, "f1", support=lambda c: Cell(report["support"].get(c))
    )
    return _folded("judge-per-type", title, "judge-per-type", PER_TYPE, rows)


def threshold_table(who: str, split: Mapping, names: Mapping, codes) -> Table:
    test = split.get("test", {})
    title = (
        f"{who}: thresholds chosen on {split['n_dev_conversations']} development "
        f"conversations (share {split['dev_share']}, seed {split['seed']}), scored on the "
        f"{split['n_test_conversations']} others"
    )
    given = {
        "threshold": lambda c: Cell(
            split["threshold"].get(c), split.get("threshold_reason", {}).get(c, "")
        ),
        "dev_f1": lambda c: Cell(
            split["dev_f1"].get(c), split.get("threshold_reason", {}).get(c, "")
        ),
        "support": lambda c: Cell((test.get("support") or {}).get(c)),
    }
    section = {**test, "threshold": split["threshold"]}
    rows = _type_rows(section, THRESHOLD, names, codes, who, "threshold", **given)
    totals = {
        k: Cell(split[k])
        for k in ("n_dev_cards", "n_test_cards", "n_dev_conversations", "n_test_conversations")
    }
    return Table(
        "judge-threshold",
        title,
        "judge-threshold",
        THRESHOLD,
        rows,
        outputs=DETAIL,
        totals=totals,
        heading=False,
        summary=title,
    )


def pr_table(who: str, curves: Mapping) -> Table:
    """The curves' points, in the CSV only (the page draws them)."""
    rows = tuple(
        Row(
            (Cell(code), Cell(p), Cell(r, "" if r is not None else "no card of the type")),
            name=f"{who}|{t}",
            label=code,
        )
        for code, curve in curves.items()
        for t, p, r in curve["points"]
    )
    return Table("judge-pr", f"{who}: precision-recall", "judge-pr", PR, rows, outputs={CSV})


def models_table(pairs: Sequence[Mapping], label: Mapping) -> Table:
    rows = tuple(
        Row(
            cells(pair, MODELS, a=Cell(label[str(pair["a"])]), b=Cell(label[str(pair["b"])])),
            name=f"{label[str(pair['a'])]}|{label[str(pair['b'])]}",
            text=f"{label[str(pair['a'])]} and {label[str(pair['b'])]}",
        )
        for pair in pairs
    )
    return Table(
        "judge-models",
        "Machine judges against each other, on the cards both read",
        "judge-models",
        MODELS,
        rows,
        outputs=MAIN,
    )


def model_types_table(pair: Mapping, label: Mapping, names: Mapping, codes) -> Table:
    who = f"{label[str(pair['a'])]}|{label[str(pair['b'])]}"
    title = f"{label[str(pair['a'])]} and {label[str(pair['b'])]}: κ per type"
    rows = _type_rows(pair, MODEL_TYPES, names, codes, who, "per_label_kappa")
    return _folded("judge-models-per-type", title, "judge-models", MODEL_TYPES, rows)


def _folded(table_id: str, title: str, scope: str, columns, rows) -> Table:
    return Table(
        table_id, title, scope, columns, rows, outputs=DETAIL, heading=False, summary=title
    )
