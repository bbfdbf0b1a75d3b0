"""The agreement report's tables, built once from a done job's result (spec.py says what a
table is): report_spec(result, taxonomy) -> [AxisSpec]. Numbers the result does not store
are computed here from it, once: the per-type summary of the pairs' kappas (mean, lowest,
highest) and each annotator's macro F1 against the consensus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .episode_tables import episode_spec
from .judge_tables import judge_tables
from .spec import (
    COUNT,
    EVERYWHERE,
    KAPPA,
    NO_SMELL,
    NULL_MD,
    AxisSpec,
    Cell,
    Column,
    Row,
    Table,
    TaxonomyEntry,
    cells,
    fmt,
    folded,
    label_cell,
    pair_label,
    type_rows,
    value_of,
)
from .splitcheck import split_check_tables
from .versus_tables import versus_table, versus_types_table


def report_spec(
    result: Mapping,
    taxonomy: Mapping[str, Sequence[TaxonomyEntry]],
    axis_names: Mapping[str, str] | None = None,
) -> list[AxisSpec]:
    names = axis_names or {}
    axes = result.get("axes", {})
    # the taxonomy's order, not the stored result's: PostgreSQL's jsonb keeps an object's
    # keys sorted by length (the report showed Cause before Symptom)
    order = [a for a in taxonomy if a in axes] + [a for a in axes if a not in taxonomy]
    judges = result.get("judges")  # a lead's copy only (access.report_result)
    episodes = episode_spec(
        result, list(taxonomy)
    )  # after the axes: the study's episodes, when it has some
    return [
        AxisSpec(
            axis,
            names.get(axis, axis),
            axis_tables(axis, axes[axis], taxonomy.get(axis, []))
            + judge_tables(judges, axis, taxonomy.get(axis, [])),
        )
        for axis in order
    ] + ([episodes] if episodes is not None else [])


def axis_tables(axis: str, data: Mapping, entries: Sequence[TaxonomyEntry]) -> list[Table]:
    report, extras = data.get("report", {}), data.get("extras", {})
    names = {e.code: e.name for e in entries}
    codes = [e.code for e in entries] + [c for c in report.get("prevalence", {}) if c not in names]
    between = data.get("between_groups", {})
    versus = data.get("versus_consensus", {})
    return [
        summary_table(axis, report),
        kappa_table(report, extras, data.get("teams"), data.get("phases")),
        pairs_table(report, extras),
        between_table(between),
        *(pair_types_table(key, pair, codes, names) for key, pair in _pairs(report)),
        per_type_table(report, codes, names),
        versus_table(versus),
        *(versus_types_table(who, r, codes, names) for who, r in versus.items()),
        taxonomy_table(extras, entries),
        *split_check_tables(data.get("split_check")),
    ]


def _pairs(report: Mapping):
    return report.get("pairs", {}).items()


CI = Column("cohen_kappa_ci", "95% CI", "ci", tex="95\\% CI", text="95% CI {}")
AGREEMENT = Column("percent_agreement", "Percent agreement", text="agreement {}")
MACRO = Column(
    "per_label_kappa_macro",
    "Per-label κ (macro)",
    tex="Per-label $\\kappa$ (macro)",
    text="per-label macro {}",
)
MICRO = Column(
    "per_label_kappa_micro",
    "Per-label κ (micro)",
    tex="Per-label $\\kappa$ (micro)",
    text="micro {}",
)
PABAK = Column("pabak", "PABAK", text="PABAK {}")
COMMON = Column("n_common_cards", "Common cards", COUNT, text="{} common cards")

SUMMARY = (
    Column("n_cards", "Cards", COUNT, text="{} cards"),
    Column("n_annotators", "Annotators", COUNT, text="{} annotators"),
    Column("n_annotations", "Records", COUNT, text="{} records"),
    Column("n_pairable_cards", "Pairable cards", COUNT, text="{} pairable cards"),
    Column(
        "krippendorff_alpha_nominal",
        "Krippendorff's α (nominal)",
        text="Krippendorff's alpha: nominal {}",
    ),
    Column("krippendorff_alpha_masi", "Krippendorff's α (MASI)", text="MASI {}"),
    Column(
        "percent_agreement_all",
        "Percent agreement (all annotators)",
        text="agreement of all annotators {}",
    ),
    Column(
        "mean_pairwise_percent_agreement",
        "Mean pairwise percent agreement",
        text="mean pairwise agreement {}",
    ),
    Column("fleiss_kappa", "Fleiss' κ", optional=True, text="Fleiss' kappa {}"),
    Column(
        "fleiss_kappa_complete_cards",
        "Fleiss' κ (complete cards)",
        n="n_complete_cards",
        optional=True,
        text="Fleiss' kappa on the complete cards {}",
    ),
)


def summary_table(axis: str, report: Mapping) -> Table:
    row = Row(cells(report, SUMMARY), text=f"Axis {axis}")
    totals = {"n_complete_cards": value_of(report, "n_complete_cards")}
    return Table("summary", "Summary", "axis", SUMMARY, (row,), totals=totals, record=True)


KAPPA_GROUPS = (
    Column("group", "Group", "text"),
    Column("n_pairs", "Pairs", COUNT),
    KAPPA,
    CI,
    AGREEMENT,
    MACRO,
    MICRO,
)


def kappa_table(
    report: Mapping,
    extras: Mapping,
    teams: Mapping[str, Mapping] | None = None,
    phases: Mapping[str, Mapping] | None = None,
) -> Table:
    """One row per group, then one per team (teams.py: the mean of its groups' values) and
    per phase where the groups' phases differ, then "All pairs" (the report's group_mean),
    named for the kinds it mixes when the study has groups of several."""
    by_group = extras.get("pairs_by_group", {})
    rows = [
        Row(
            cells(
                section, KAPPA_GROUPS, group=Cell(name), n_pairs=Cell(len(by_group.get(name, [])))
            ),
            name=name,
            text=f"Group {name}",
        )
        for name, section in report.get("groups", {}).items()
    ]
    # in name order, not the stored result's (PostgreSQL's jsonb orders keys by length)
    teams = {k: teams[k] for k in sorted(teams or {})}
    phases = {k: phases[k] for k in sorted(phases or {})}
    rows += team_rows(teams, phases, by_group)
    mean = report.get("group_mean", {})
    n_pairs = Cell(len(report.get("pairs", {})))
    everyone = "All pairs"
    if len(teams) >= 2:
        everyone += f" ({' and '.join(f'{kind}s' for kind in teams)} together)"
    rows.append(
        Row(
            cells(mean, KAPPA_GROUPS, group=Cell(everyone), n_pairs=n_pairs),
            name="all pairs",
            scope="overall",
            text=everyone,
            css="overall",
        )
    )
    note = (
        '"All pairs" is the unweighted mean over every pair of annotators in a group; '
        "intervals are bootstrap 95% percentile intervals over cards."
    )
    if len(rows) > len(report.get("groups", {})) + 1:
        note += (
            " A team's row (\"Expert groups: mean of N\") is the unweighted mean of its groups' "
            "values, each over the groups where it is defined (κ: the N groups; in brackets "
            "the lowest and the highest group's κ); a phase's row the same over the groups "
            "in that phase when the report was computed. A mean of groups has no interval."
        )
    return Table(
        "kappa-groups",
        "Cohen's kappa per group",
        "group",
        KAPPA_GROUPS,
        tuple(rows),
        outputs=EVERYWHERE,
        note=note,
    )


NO_TEAM_INTERVAL = "not applicable: a mean of groups has no interval (each group's is on its row)"


def team_rows(
    teams: Mapping[str, Mapping], phases: Mapping[str, Mapping], by_group: Mapping
) -> list[Row]:
    """A row per team when there are two groups or more, "Expert groups: mean of 2
    (0.780–0.810)"; a row per phase when the groups' phases differ, unless the phases part
    the groups as the teams do: the team's row then names its phase. In the order given."""
    if sum(t.get("n_groups", 0) for t in teams.values()) < 2:
        return []
    rows = []
    phase_of_team: dict[str, str] = {}
    if len(phases) >= 2:
        by_members = {tuple(p.get("groups", [])): phase for phase, p in phases.items()}
        if sorted(by_members) == sorted(tuple(t.get("groups", [])) for t in teams.values()):
            phase_of_team = {k: by_members[tuple(t.get("groups", []))] for k, t in teams.items()}
    for kind, team in teams.items():
        title = f"{kind.capitalize()} groups"
        if kind in phase_of_team:
            title += f" ({phase_of_team[kind].replace('_', ' ')})"
        rows.append(_mean_row("team", kind, title, team, by_group))
    if len(phases) >= 2 and not phase_of_team:
        for phase, entry in phases.items():
            title = f"{phase.replace('_', '-').capitalize()} groups"
            rows.append(_mean_row("phase", phase, title, entry, by_group))
    return rows


def _mean_row(scope: str, name: str, title: str, entry: Mapping, by_group: Mapping) -> Row:
    n_groups, n_defined = entry.get("n_groups", 0), entry.get("n_defined", 0)
    title += f": mean of {n_defined}" + (f" of {n_groups}" if n_defined != n_groups else "")
    if entry.get("lowest") is not None:
        title += f" ({fmt(entry['lowest'])}–{fmt(entry['highest'])})"

    def mean(key: str) -> Cell:
        return Cell(entry.get(f"{key}_mean"), entry.get(f"{key}_mean_reason") or "")

    cells = {
        "group": Cell(title),
        "n_pairs": Cell(sum(len(by_group.get(g, [])) for g in entry.get("groups", []))),
        "cohen_kappa_ci": Cell(None, NO_TEAM_INTERVAL),
        **{c.name: mean(c.name) for c in KAPPA_GROUPS if c.kind not in ("text", "count", "ci")},
    }
    no_kappa = entry.get("cohen_kappa_mean_reason") or ""
    extra = {
        "lowest": Cell(entry.get("lowest"), no_kappa),
        "highest": Cell(entry.get("highest"), no_kappa),
        "n_groups": Cell(n_groups),
        "n_defined": Cell(n_defined),
    }
    return Row(
        tuple(cells[c.name] for c in KAPPA_GROUPS),
        name=name,
        scope=scope,
        text=title,
        css="team",
        extra=extra,
    )


PAIRS = (
    Column("pair", "Pair", "text"),
    Column("groups", "Group", "text"),
    COMMON,
    KAPPA,
    CI,
    AGREEMENT,
    PABAK,
    MACRO,
    MICRO,
)


def pairs_table(report: Mapping, extras: Mapping) -> Table:
    group_of: dict[str, list[str]] = {}
    for group, keys in extras.get("pairs_by_group", {}).items():
        for key in keys:
            group_of.setdefault(key, []).append(group)
    rows = tuple(
        Row(
            cells(
                pair,
                PAIRS,
                pair=Cell(pair_label(key, pair, " · ")),
                groups=Cell(", ".join(group_of.get(key, []))),
            ),
            name=pair_label(key, pair),
            text=pair_label(key, pair),
        )
        for key, pair in _pairs(report)
    )
    empty = "No pair of annotators shares a group."
    return Table("pairs", "Pairs", "pair", PAIRS, rows, empty=empty)


BETWEEN = (Column("groups", "Groups", "text"), COMMON, KAPPA, CI, AGREEMENT, PABAK, MACRO)


def between_table(between: Mapping) -> Table:
    n = between.get("n_cards", 0)
    rows = tuple(
        Row(
            cells(pair, BETWEEN, groups=Cell(pair_label(key, pair, " · "))),
            name=pair_label(key, pair),
            text=pair_label(key, pair),
        )
        for key, pair in between.get("pairs", {}).items()
    )
    intro = (
        f"The groups' consensus labels compared on the {n} card{'' if n == 1 else 's'} "
        "several groups decided (each group in an annotator's place)."
    )
    totals = {"n_cards": Cell(n)} if rows else {}
    return Table(
        "between-groups",
        "Between groups",
        "between_groups",
        BETWEEN,
        rows,
        totals=totals,
        intro=intro,
    )


PAIR_TYPES = (
    Column("type", "Type", "text"),
    Column("per_label_kappa", "Cohen's κ", tex="Cohen's $\\kappa$"),
    Column("per_label_pabak", "PABAK"),
    Column("per_label_ac1", "Gwet's AC1"),
)


def pair_types_table(key: str, pair: Mapping, codes, names) -> Table:
    title = f"Per type: {pair_label(key, pair, ' · ')} (κ, PABAK, AC1)"
    rows = type_rows(pair, PAIR_TYPES, codes, names, "per_label_kappa", name=pair_label(key, pair))
    return folded("pair-per-type", title, "pair", PAIR_TYPES, rows)


PER_TYPE = (
    Column("type", "Type", "text"),
    Column("prevalence", "Prevalence (consensus)", text="prevalence {}"),
    Column("krippendorff_alpha_nominal_per_label", "Krippendorff's α (nominal)", text="alpha {}"),
    Column("fleiss_kappa_per_label", "Fleiss' κ", optional=True, text="Fleiss {}"),
    Column("pair_kappa_mean", "Mean of the pairs' κ", text="mean pair kappa {}"),
    Column("pair_kappa_min", "Lowest pair κ", text="lowest {}"),
    Column("pair_kappa_max", "Highest pair κ", text="highest {}"),
    Column(
        "n_pairs_defined", "Pairs with a defined κ", COUNT, n="n_pairs", text="defined for {} pairs"
    ),
)


def pair_kappa_summary(report: Mapping, code: str) -> dict[str, Cell]:
    """Per type over the pairs: the mean of their defined kappas, the lowest, the highest,
    and how many pairs have one."""
    pairs = [p for p in report.get("pairs", {}).values() if "per_label_kappa" in p]
    defined = [v for p in pairs if (v := p["per_label_kappa"].get(code)) is not None]
    if not defined:
        reasons = {(p.get("per_label_kappa_reason") or {}).get(code, "") for p in pairs} - {""}
        why = "; ".join(sorted(reasons)) or "undefined: no pair"
        none = Cell(None, why)
        return {"pair_kappa_mean": none, "pair_kappa_min": none, "pair_kappa_max": none,
                "n_pairs_defined": Cell(0)}  # fmt: skip
    return {
        "pair_kappa_mean": Cell(sum(defined) / len(defined)),
        "pair_kappa_min": Cell(min(defined)),
        "pair_kappa_max": Cell(max(defined)),
        "n_pairs_defined": Cell(len(defined)),
    }


def per_type_table(report: Mapping, codes: Sequence[str], names: Mapping[str, str]) -> Table:
    rows = []
    for code in codes:
        given = {"type": Cell(names.get(code, code)), **pair_kappa_summary(report, code)}
        cells = tuple(
            given[c.name] if c.name in given else label_cell(report, c.name, code) for c in PER_TYPE
        )
        rows.append(Row(cells, label=code, text=code))
    intro = (
        "Bars: mean over the pairs of each type's Cohen's kappa (present/absent); whiskers: "
        'lowest to highest pair. "—": undefined for every pair (hover for why).'
    )
    totals = {"n_pairs": Cell(len(report.get("pairs", {})))}
    return Table(
        "per-type",
        "Per-type kappa",
        "axis",
        PER_TYPE,
        tuple(rows),
        totals=totals,
        intro=intro,
        summary="Per type: the numbers",
    )


TAXONOMY = (
    Column("category", "Category", "text", repeat=False),
    Column("type", "Type", "text"),
    Column("count", "Consensus cards", COUNT, text="{} consensus cards"),
    Column("share_of_cards", "Share of consensus cards", "share", n="n_cards", text="{} of cards"),
    Column("share", "Share of label instances", "share", n="n_instances", text="{} of instances"),
)
NOT_COUNTED = Cell(None, "not counted")


def _taxonomy_row(category: str, code: str, type_name: str, row: Mapping, **kw) -> Row:
    def share(key: str) -> Cell:
        return value_of(row, key) if key in row else NOT_COUNTED

    cells = (Cell(category), Cell(type_name), Cell(int(row.get("count", 0))))
    cells += (share("share_of_cards"), share("share"))
    return Row(cells, label=code, **kw)


def taxonomy_table(extras: Mapping, entries: Sequence[TaxonomyEntry]) -> Table:
    """The study's taxonomy table in the taxonomy's order; a code the taxonomy no longer
    has (an older version's) comes last under its code. A result computed before the empty
    set was counted has no "no smell" row (rather than a wrong 0)."""
    counted = extras.get("taxonomy_table", {})
    by_code = {row["code"]: row for row in counted.get("rows", [])}
    known = {e.code for e in entries}
    ordered = list(entries) + [
        TaxonomyEntry(code, code, NULL_MD) for code in by_code if code not in known
    ]
    rows = [
        _taxonomy_row(e.category, e.code, e.name, by_code.get(e.code, {"count": 0}),
                      name=e.category, text=e.code)
        for e in ordered
    ]  # fmt: skip
    if counted.get("no_smell") is not None:
        no_smell = counted["no_smell"]
        rows.append(
            _taxonomy_row(
                "", "", NO_SMELL, no_smell, name="no smell", text="no smell", css="no-smell"
            )
        )
    totals = {k: value_of(counted, k) for k in ("n_cards", "n_instances") if k in counted}
    note = (
        "Consensus cards: the cards whose consensus carries the type (a card may carry "
        "several). Share of consensus cards: over the {n_cards} cards with a consensus, "
        '"no smell" included, so the types\' shares may add up to more than 100%. Share of '
        "label instances: over the {n_instances} types given in all consensus sets, as the "
        'study\'s paper reports it; "no smell" is no label instance.'
    ).format(
        n_cards=fmt(counted.get("n_cards"), ""), n_instances=fmt(counted.get("n_instances"), "")
    )
    return Table(
        "taxonomy-table",
        "Taxonomy",
        "taxonomy",
        TAXONOMY,
        tuple(rows),
        outputs=EVERYWHERE,
        totals=totals,
        note=note,
    )
