"""The annotation's steps of the methods section: phases and teams, agreement, moderation.

- Phases and teams: each group with its kind, the phase it labelled in (context.GroupInfo),
  its annotators, moderator, conversations and cards; a team is the groups of one kind.
- Agreement: from the latest finished agreement job (the report page's): Cohen's kappa per
  group with its bootstrap interval (axes[axis].report.groups), the mean per team
  (axes[axis].teams, the groups of one kind) and per phase, within one kind: no mean mixes
  experts and students (AGREEMENT.md, teams[kind]).
- Moderation: per group, from the card states, labels and decisions (a card counts once per
  group that labels it):
  - disputed: the card left round 1 with different label sets: it is disputed or escalated
    now, is in a discussion round (round 2 or later), or a moderator decided it;
  - revised in discussion: an annotator's current labels of a discussion round differ from
    their own round-1 labels on the card;
  - agreed in discussion: its consensus came from a discussion round (method discussion);
  - escalated: still different after the study's discussion rounds: escalated now, or decided
    by a moderator once every annotator of the group had labelled the round it was in;
  - decided by a moderator: its consensus is the moderator's (method moderator);
  and the proposals of new types (made, accepted, mapped, rejected, pending), each counted in
  the group where its proposer labels the card."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q

from ..agreement.teams import team_means
from ..models import (
    Annotation,
    Assignment,
    CardState,
    CardStatus,
    Consensus,
    Method,
    Proposal,
    ProposalStatus,
    Turn,
    group_state_counts,
)
from .context import Context, GroupInfo
from .steps import Column, Step, interval, kappa, listed, n, plural, when

PHASE_WORDS = {"open_sort": "the open sort", "closed_sort": "the closed sort"}

TEAM_COLUMNS = (
    Column("group", "Group"),
    Column("kind", "Kind"),
    Column("phase", "Phase"),
    Column("annotators", "Annotators"),
    Column("moderator", "Moderator"),
    Column("conversations", "Conversations", "count"),
    Column("cards", "Cards", "count"),
)


def _team(groups: list[GroupInfo]) -> dict:
    return {
        "groups": [g.name for g in groups],
        "annotators": sorted({u for g in groups for u in g.annotators}),
        "phases": sorted({g.phase for g in groups}),
        "conversations": sum(g.conversations for g in groups),
        "cards": sum(g.cards for g in groups),
    }


def teams_step(ctx: Context) -> Step:
    groups = ctx.groups
    kinds = sorted({g.kind for g in groups})
    teams = {kind: _team([g for g in groups if g.kind == kind]) for kind in kinds}
    data = {
        "groups": [
            {"name": g.name, "kind": g.kind, "phase": g.phase, "phase_now": g.phase_now,
             "annotators": g.annotators, "moderator": g.moderator or None,
             **({"judges": g.judges} if ctx.reads_judges else {}),  # leads only
             "conversations": g.conversations, "cards": g.cards}
            for g in groups
        ],
        "teams": teams,
    }  # fmt: skip
    rows = [
        [g.name, g.kind, g.phase, ", ".join(g.annotators), g.moderator or "(the leads)",
         g.conversations, g.cards]
        for g in groups
    ]  # fmt: skip
    if not groups:
        text = "No group was set up."
    else:
        said = []
        for kind, team in teams.items():
            phases = listed([PHASE_WORDS.get(p, p) for p in team["phases"]])
            said.append(
                f"The {kind} team, {plural(len(team['annotators']), 'annotator')} "
                f"({listed(team['annotators'])}) in {plural(len(team['groups']), 'group')}, "
                f"had {plural(team['conversations'], 'conversation')} "
                f"({plural(team['cards'], 'card')}) to label in {phases}."
            )
        said.append(
            "A conversation assigned to a group is labelled by each of its annotators, every "
            "turn of it a card; a conversation shared by groups counts in each."
        )
        text = " ".join(said)
    return Step("teams", "Phases and teams", text, TEAM_COLUMNS, rows, data)


# -- agreement --------------------------------------------------------------------------------


AGREEMENT_COLUMNS = (
    Column("axis", "Axis"),
    Column("group", "Group"),
    Column("kind", "Kind"),
    Column("phase", "Phase"),
    Column("kappa", "Cohen's κ", "number"),
    Column("kappa_ci", "95% CI", "ci"),
    Column("percent_agreement", "Agreement", "share"),
)


def _phase_means(groups: dict, ctx: Context) -> dict:
    """{phase: {kind: team_means entry}}: the mean per phase, one kind at a time."""
    out: dict = {}
    by_phase: dict = defaultdict(dict)
    for name in groups:
        info = ctx.group_by_name.get(name)
        if info is not None:
            by_phase[info.phase][name] = groups[name]
    for phase in sorted(by_phase):
        kinds = {name: ctx.group_by_name[name].kind for name in by_phase[phase]}
        out[phase] = team_means(by_phase[phase], kinds)
    return out


def agreement_step(ctx: Context) -> Step:
    job = ctx.agreement_job
    if job is None:
        text = (
            "No agreement was computed yet (Compute agreement on the study page, or "
            "`manage.py agreement SLUG --save`)."
        )
        return Step("agreement", "Agreement", text, AGREEMENT_COLUMNS, [], {"job": None})
    result, rows, axes = job.result, [], {}
    for code, axis in result.get("axes", {}).items():
        groups = axis.get("report", {}).get("groups", {})
        kinds = {name: g.kind for name, g in ctx.group_by_name.items()}
        teams = axis.get("teams") or team_means(groups, kinds)
        phases = _phase_means(groups, ctx)
        axes[code] = {"groups": {}, "teams": teams, "phases": phases}
        for name, section in groups.items():
            info = ctx.group_by_name.get(name)
            kind, phase = (info.kind, info.phase) if info else (None, None)
            axes[code]["groups"][name] = {
                "kind": kind, "phase": phase, "kappa": section.get("cohen_kappa"),
                "kappa_ci": section.get("cohen_kappa_ci"),
                "percent_agreement": section.get("percent_agreement"),
            }  # fmt: skip
            g = axes[code]["groups"][name]
            rows.append([code, name, kind, phase, g["kappa"], g["kappa_ci"],
                         g["percent_agreement"]])  # fmt: skip
        for kind, team in teams.items():
            label = f"mean of the {kind} groups ({team['n_defined']} of {team['n_groups']})"
            rows.append([code, label, kind, None, team.get("cohen_kappa_mean"), None, None])
        if any(len(p) > 1 for p in phases.values()) or _phases_split_a_kind(phases):
            for phase, per_kind in phases.items():
                for kind, team in per_kind.items():
                    label = f"mean of the {kind} groups in {PHASE_WORDS.get(phase, phase)}"
                    rows.append([code, label, kind, phase, team.get("cohen_kappa_mean"), None,
                                 None])  # fmt: skip
    data = {
        "job": job.pk,
        "computed_at": result.get("computed_at"),
        "round": result.get("round", 1),
        "n_boot": result.get("n_boot"),
        "taxonomy_version": result.get("taxonomy_version"),
        "axes": axes,
    }
    return Step("agreement", "Agreement", _agreement_text(data), AGREEMENT_COLUMNS, rows, data)


def _phases_split_a_kind(phases: dict) -> bool:
    """Whether one kind's groups labelled in several phases (then the per-phase means say
    more than the per-team ones)."""
    seen: dict = defaultdict(set)
    for phase, per_kind in phases.items():
        for kind in per_kind:
            seen[kind].add(phase)
    return any(len(p) > 1 for p in seen.values())


def _agreement_text(data: dict) -> str:
    boot = data["n_boot"]
    said = [
        f"Agreement is Cohen's kappa between the two annotators of a group, with the label set "
        f"of a card as one category, on the round-{data['round']} labels (each annotator's "
        "own, given blind)"
        + (f", with 95% intervals from {n(boot)} bootstrap resamples of the cards" if boot else "")
        + f" (job {data['job']}, computed {when(data['computed_at'])})."
    ]
    for code, axis in data["axes"].items():
        where = f" (axis {code})" if len(data["axes"]) > 1 else ""
        per_group = [
            f"{name} {kappa(g['kappa'])} {interval(g['kappa_ci'])}"
            for name, g in axis["groups"].items()
        ]
        if per_group:
            said.append(f"Kappa per group{where}: {'; '.join(per_group)}.")
        for kind, team in axis["teams"].items():
            mean = team.get("cohen_kappa_mean")
            text = (
                f"Mean of the {kind} groups{where}: {kappa(mean)} ({team['n_defined']} of "
                f"{plural(team['n_groups'], 'group')} with a defined kappa"
            )
            if mean is not None:
                text += f"; lowest {kappa(team['lowest'])}, highest {kappa(team['highest'])}"
            said.append(text + ").")
    said.append("No mean mixes the expert and the student groups.")
    return " ".join(said)


# -- moderation -------------------------------------------------------------------------------


MODERATION_COLUMNS = (
    Column("group", "Group"),
    Column("cards", "Cards", "count"),
    Column("agreed_round_1", "Agreed in round 1", "count"),
    Column("disputed", "Disputed", "count"),
    Column("revised", "Revised in discussion", "count"),
    Column("agreed_discussion", "Agreed in discussion", "count"),
    Column("escalated", "Escalated", "count"),
    Column("moderator", "Decided by a moderator", "count"),
    Column("open", "Still disputed", "count"),
    Column("proposals", "Proposals", "count"),
)
KEYS = [c.name for c in MODERATION_COLUMNS[1:]]


def _group_of(ctx: Context, turn_ids: set[int]) -> dict[tuple[int, int], int]:
    """{(turn, annotator): group} where the annotator labels the card (one group at most:
    Group.check_seat)."""
    conversation_of = dict(Turn.objects.filter(pk__in=turn_ids).values_list("pk", "conversation"))
    groups_of = defaultdict(set)
    for conversation, group in Assignment.objects.filter(
        conversation_id__in=set(conversation_of.values())
    ).values_list("conversation_id", "group_id"):
        groups_of[conversation].add(group)
    seated = {g.pk: set(g.annotator_ids) for g in ctx.groups}
    out = {}
    for turn, conversation in conversation_of.items():
        for group in groups_of[conversation]:
            for annotator in seated.get(group, ()):
                out[(turn, annotator)] = group
    return out


def _codes(annotations) -> dict[int, frozenset]:
    through = Annotation.types.through.objects.filter(annotation_id__in=annotations)
    codes = defaultdict(set)
    for pk, code in through.values_list("annotation_id", "type__code"):
        codes[pk].add(code)
    return {pk: frozenset(codes[pk]) for pk in annotations}


def _revised(ctx: Context) -> dict[int, set[int]]:
    """{group: cards} on which an annotator's discussion-round labels differ from their own
    round-1 labels."""
    current = Annotation.objects.current().filter(turn__conversation__study=ctx.study)
    later = list(current.filter(round__gte=2).values_list("pk", "turn_id", "annotator_id"))
    if not later:
        return {}
    turns = {t for _, t, _ in later}
    first = dict(
        ((t, a), pk)
        for pk, t, a in current.filter(round=1, turn_id__in=turns).values_list(
            "pk", "turn_id", "annotator_id"
        )
    )
    codes = _codes([pk for pk, _, _ in later] + list(first.values()))
    where = _group_of(ctx, turns)
    out: dict = defaultdict(set)
    for pk, turn, annotator in later:
        own = first.get((turn, annotator))
        group = where.get((turn, annotator))
        if group is not None and (own is None or codes[own] != codes[pk]):
            out[group].add(turn)
    return out


def _escalated_then_decided(ctx: Context, decided: list[tuple]) -> dict[int, int]:
    """{group: cards} a moderator decided once every annotator had labelled their round."""
    seated = {g.pk: set(g.annotator_ids) for g in ctx.groups}
    labelled = defaultdict(set)
    turns = {t for t, _, _ in decided}
    for turn, annotator, round in (
        Annotation.objects.current()
        .filter(turn_id__in=turns)
        .values_list("turn_id", "annotator_id", "round")
    ):
        labelled[(turn, round)].add(annotator)
    out: dict = defaultdict(int)
    for turn, group, round in decided:
        if seated.get(group) and seated[group] <= labelled[(turn, round)]:
            out[group] += 1
    return out


def _proposals(ctx: Context) -> tuple[dict, dict[int, int]]:
    rows = list(Proposal.objects.filter(study=ctx.study).values_list("turn_id", "proposer_id"))
    where = _group_of(ctx, {t for t, _ in rows})
    per_group: dict = defaultdict(int)
    for turn, proposer in rows:
        if (turn, proposer) in where:
            per_group[where[(turn, proposer)]] += 1
    counts = Proposal.objects.filter(study=ctx.study).counts()
    return {"made": len(rows), **counts}, per_group


def moderation_counts(ctx: Context) -> dict[int, dict[str, int]]:
    """{group id: {column: cards}} (see the module's docstring)."""
    study = ctx.study
    states = CardState.objects.filter(group__study=study)
    left = Q(round__gte=2) | Q(status__in=[CardStatus.DISPUTED, CardStatus.ESCALATED])
    counts: dict = {g.pk: dict.fromkeys(KEYS, 0) for g in ctx.groups}

    def add(key: str, pairs) -> None:
        for group, count in pairs:
            if group in counts:
                counts[group][key] += count

    def per_group(rows) -> list:
        return list(rows.values_list("group_id").annotate(c=Count("pk")).order_by())

    add("disputed", per_group(states.filter(left)))
    # disputed or escalated now: the kept figures (one row a group)
    for group, by_status in group_state_counts(list(counts)).items():
        add("open", [(group, by_status["disputed"] + by_status["escalated"])])
        add("escalated", [(group, by_status["escalated"])])
    consensus = Consensus.objects.current().filter(group__study=study)
    add("agreed_round_1", per_group(consensus.filter(method__in=[Method.UNANIMOUS, Method.SINGLE])))
    add("agreed_discussion", per_group(consensus.filter(method=Method.DISCUSSION)))
    decided = list(
        consensus.filter(method=Method.MODERATOR).values_list("turn_id", "group_id", "from_round")
    )
    add("moderator", [(g, 1) for _, g, _ in decided])
    # a card a moderator decided is disputed too when its state no longer says so (asked of
    # those cards only: a condition beside `left` made PostgreSQL probe every state, 100 ms
    # at 1,000,000 conversations)
    pairs = {(t, g) for t, g, _ in decided}
    by_moderator = consensus.filter(method=Method.MODERATOR).values("turn_id")
    quiet = states.filter(turn_id__in=by_moderator).exclude(left)
    add(
        "disputed", [(g, 1) for t, g in quiet.values_list("turn_id", "group_id") if (t, g) in pairs]
    )
    add("escalated", _escalated_then_decided(ctx, decided).items())
    add("revised", [(g, len(cards)) for g, cards in _revised(ctx).items()])
    for g in ctx.groups:
        counts[g.pk]["cards"] = g.cards
    return counts


def moderation_step(ctx: Context) -> Step:
    counts = moderation_counts(ctx)
    proposals, per_group = _proposals(ctx)
    for group, made in per_group.items():
        counts[group]["proposals"] = made
    rows = [[g.name, *(counts[g.pk][k] for k in KEYS)] for g in ctx.groups]
    totals = {k: sum(counts[g.pk][k] for g in ctx.groups) for k in KEYS}
    if len(ctx.groups) > 1:
        rows.append(["all groups", *(totals[k] for k in KEYS)])
    data = {
        "groups": {g.name: counts[g.pk] for g in ctx.groups},
        "totals": totals,
        "proposals": proposals,
        "discussion_rounds": ctx.study.discussion_rounds,
    }
    return Step("moderation", "Moderation", _moderation_text(data), MODERATION_COLUMNS, rows,
                data)  # fmt: skip


def _moderation_text(data: dict) -> str:
    t, p = data["totals"], data["proposals"]
    rounds = plural(data["discussion_rounds"], "discussion round")
    return (
        f"Of {plural(t['cards'], 'card')} ({n(t['agreed_round_1'])} agreed in round 1), "
        f"{n(t['disputed'])} left round 1 disputed: their annotators' label sets differed, and "
        f"they saw each other's labels and discussed them ({rounds} at most). Revised in "
        f"discussion (an annotator changed their labels): {n(t['revised'])}; agreed in "
        f"discussion: {n(t['agreed_discussion'])}; escalated to the moderator (still "
        f"different after the discussion): {n(t['escalated'])}; decided by a moderator: "
        f"{n(t['moderator'])}; still disputed or escalated now: {n(t['open'])}. Proposals of a "
        f"new type: {n(p['made'])} made; the experts accepted {n(p[ProposalStatus.ACCEPTED])}, "
        f"mapped {n(p[ProposalStatus.MAPPED])} to an existing type and rejected "
        f"{n(p[ProposalStatus.REJECTED])}; {n(p[ProposalStatus.PENDING])} pending."
    )
