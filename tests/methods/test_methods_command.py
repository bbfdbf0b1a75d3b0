"""manage.py methods SLUG: every number of the methods section equals a count computed here,
independently, from the files, the corpus's truth and the database, on a study built through
the real commands (conftest.built)."""

from __future__ import annotations

import json
from collections import defaultdict
from io import StringIO
from statistics import mean

import pytest
from django.core.management import CommandError, call_command
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from annotation.intake.llm import SYSTEM_PROMPT, examples_digest, read_examples
from annotation.judges.client import digest_of
from annotation.models import (
    Annotation,
    CardState,
    Consensus,
    Conversation,
    Group,
    Job,
    JobKind,
    Proposal,
    SetAside,
    SplitProposal,
    Turn,
)

from .conftest import CODING, EXAMPLES, FILE_A, FILE_B

pytestmark = pytest.mark.django_db


def methods(slug: str, fmt: str = "json"):
    out = StringIO()
    call_command("methods", slug, "--format", fmt, stdout=out)
    return json.loads(out.getvalue()) if fmt == "json" else out.getvalue()


def step(section: dict, name: str) -> dict:
    return next(s for s in section["steps"] if s["step"] == name)


def column(s: dict, name: str) -> list:
    at = [c["name"] for c in s["columns"]].index(name)
    return [row[at] for row in s["rows"]]


def test_it_gives_one_object_per_step_in_the_procedures_order(built):
    section = methods("m")

    assert [s["step"] for s in section["steps"]] == [
        "import", "filter", "splitting", "second-filter", "split-check", "sample", "teams",
        "agreement", "moderation",
    ]  # fmt: skip
    for s in section["steps"]:
        assert s["title"] and s["text"]
        assert all(len(row) == len(s["columns"]) for row in s["rows"])


def test_the_intake_numbers_equal_the_files_the_truth_and_the_rows(built):
    study = built["study"]
    section = methods("m")
    imp = step(section, "import")["data"]
    a, b = imp["imports"]
    lines_a = open(built["files"][0]).read().splitlines()
    assert (a["records"], a["rejected"]) == (len(lines_a), 2)  # {oops, and no user message
    assert a["dropped"] == len(set(FILE_A) - CODING)
    assert a["imported"] == len(set(FILE_A) & CODING)
    originals = Conversation.objects.filter(study=study, split_from__isnull=True)
    for entry in (a, b):
        mine = originals.filter(import_job_id=entry["job"])
        assert entry["in_study"] == mine.count()
        assert entry["turns"] == sum(mine.values_list("n_turns", flat=True))
    assert (b["records"], b["imported"], b["dropped"]) == (len(FILE_B), len(FILE_B), 0)
    assert imp["totals"]["conversations"] == originals.count()
    assert imp["outside_jobs"] == []

    first = step(section, "filter")["data"]["runs"]
    assert [(r["at"], r["scanned"], r["kept"]) for r in first] == [
        ("import", len(FILE_A), len(set(FILE_A) & CODING)),
        ("study", originals.count(), originals.count() - len(set(FILE_B) - CODING)),
    ]
    filtered_originals = originals.filter(set_aside=SetAside.FILTERED)
    assert first[1]["set_aside"] == filtered_originals.count() == len(set(FILE_B) - CODING)
    assert [e["language"] for e in first[0]["languages"]][:3] == ["Python", "C++", "Java"]
    assert all(r["default_rules"] for r in first)

    second = step(section, "second-filter")["data"]
    parts = Conversation.objects.filter(study=study, split_from__isnull=False)
    scanned = (
        Conversation.objects.filter(study=study)
        .exclude(set_aside=SetAside.SPLIT)
        .exclude(pk__in=filtered_originals)
    )
    (run,) = second["runs"]
    assert run["scanned"] == scanned.count()
    assert run["set_aside"] == parts.filter(set_aside=SetAside.FILTERED).count() == 2  # bread
    pool = [c for c in Conversation.objects.filter(study=study) if c.set_aside in ("", "sample")]
    assert second["kept_now"] == {
        "conversations": len(pool),
        "single_turn": sum(c.n_turns == 1 for c in pool),
        "multi_turn": sum(c.n_turns > 1 for c in pool),
    }

    sample = step(section, "sample")
    assert (sample["data"]["population"], sample["data"]["n"]) == (len(pool), 10)
    assert sample["data"]["seed"] == 7
    assert Conversation.objects.in_set().filter(study=study).count() == 10
    assert sample["rows"] == [["all", len(pool), 10]]


def test_the_splitting_and_the_split_check_equal_the_rows(built, fake_model):
    study, check = built["study"], built["check"]
    section = methods("m")
    s = step(section, "splitting")
    (job,) = s["data"]["jobs"]
    split_job = Job.objects.get(study=study, kind=JobKind.SPLIT)
    considered = Conversation.objects.filter(study=study, split_considered_by=split_job)
    assert job["asked"] == considered.count() == len(fake_model.requests)
    truth_split = [c for c, v in {**FILE_A, **FILE_B}.items() if v[1] and c in CODING]
    assert job["proposed"] == len(truth_split)
    points = SplitProposal.objects.filter(conversation__study=study, kind="split")
    drops = SplitProposal.objects.filter(conversation__study=study, kind="drop")
    assert (job["points"], job["drops"]) == (points.count(), drops.count())
    originals_split = Conversation.objects.filter(study=study, set_aside=SetAside.SPLIT)
    parts = Conversation.objects.filter(study=study, split_from__isnull=False)
    assert (job["split"], job["parts"]) == (originals_split.count(), parts.count())
    assert (job["model"], job["temperature"], job["seed"]) == ("fake-model", 1.0, 5)
    assert job["prompt_digest"] == digest_of(SYSTEM_PROMPT)
    assert job["examples"] == len(EXAMPLES)
    assert job["examples_digest"] == examples_digest(read_examples(
        open(built["tmp"] / "examples.jsonl", "rb").read(), "examples.jsonl"
    ))  # fmt: skip
    assert f"2 worked examples ({job['examples_digest'][:12]}) as few-shot messages" in s["text"]
    left_whole = considered.exclude(set_aside=SetAside.SPLIT).count()
    assert s["data"]["now"] == {
        "entries": parts.count() + left_whole,
        "split": originals_split.count(),
        "parts": parts.count(),
        "left_whole": left_whole,
        "dropped_turns": drops.filter(status="applied").count(),
    }

    (c,) = step(section, "split-check")["data"]["checks"]
    assert (c["study"], c["unit"], c["seed"]) == ("mcheck", "entries", 3)
    assert c["population"] == parts.count() + left_whole
    assert c["n"] == Conversation.objects.filter(study=check).count()
    consensus = list(Consensus.objects.current().filter(group__study=check))
    correct = sum(x.codes == {"correct"} for x in consensus)
    assert (c["consensus"], c["correct"]) == (len(consensus), correct)
    assert c["accuracy"] == pytest.approx(correct / len(consensus))
    assert c["accuracy_ci"] == pytest.approx(
        list(proportion_confint(correct, len(consensus), method="wilson")), abs=1e-12
    )
    labels = defaultdict(dict)
    for a in Annotation.objects.current().filter(turn__conversation__study=check, round=1):
        labels[a.annotator.username][a.turn_id] = a.codes
    turns = sorted(labels["cu1"])
    full = [[",".join(sorted(labels[u][t])) for t in turns] for u in ("cu1", "cu2")]
    binary = [[labels[u][t] == {"correct"} for t in turns] for u in ("cu1", "cu2")]
    assert c["kappa"] == pytest.approx(cohen_kappa_score(*binary), abs=1e-9)
    assert c["kappa_full"] == pytest.approx(cohen_kappa_score(*full), abs=1e-9)
    assert c["annotators"] == ["cu1", "cu2"]


def test_the_teams_agreement_and_moderation_equal_the_rows(built):
    study = built["study"]
    section = methods("m")
    groups = {g.name: g for g in Group.objects.filter(study=study)}
    teams = {g["name"]: g for g in step(section, "teams")["data"]["groups"]}
    for name, g in groups.items():
        assert teams[name]["kind"] == g.kind
        assert teams[name]["annotators"] == sorted(g.annotators.values_list("username", flat=True))
        assert teams[name]["conversations"] == g.conversations.count()
        assert teams[name]["cards"] == Turn.objects.filter(conversation__groups=g).count()
    assert {n: t["phase"] for n, t in teams.items()} == {
        "experts": "open_sort", "students-a": "closed_sort", "students-b": "closed_sort",
    }  # fmt: skip
    team = step(section, "teams")["data"]["teams"]
    assert team["student"]["annotators"] == ["st1", "st2", "st3", "st4"]

    agreement = step(section, "agreement")["data"]["axes"]["type"]
    kappas = {}
    for name, g in groups.items():
        a, b = g.annotators.order_by("username")
        rows = Annotation.objects.current().filter(round=1, turn__conversation__groups=g)
        sets = defaultdict(dict)
        for x in rows:
            sets[x.annotator_id][x.turn_id] = ",".join(sorted(x.codes))
        turns = sorted(set(sets[a.pk]) & set(sets[b.pk]))
        kappas[name] = cohen_kappa_score([sets[a.pk][t] for t in turns],
                                         [sets[b.pk][t] for t in turns])  # fmt: skip
        assert agreement["groups"][name]["kappa"] == pytest.approx(kappas[name], abs=1e-9)
    students = [kappas["students-a"], kappas["students-b"]]
    assert agreement["teams"]["student"]["cohen_kappa_mean"] == pytest.approx(mean(students))
    assert agreement["teams"]["expert"]["cohen_kappa_mean"] == pytest.approx(kappas["experts"])
    assert agreement["phases"]["open_sort"]["expert"]["n_groups"] == 1
    assert set(agreement["phases"]["closed_sort"]) == {"student"}  # never a mixed mean

    moderation = step(section, "moderation")["data"]
    for name, g in groups.items():
        assert moderation["groups"][name] == expected_moderation(g), name
    assert moderation["proposals"] == {
        "made": 3, "pending": 1, "accepted": 0, "mapped": 1, "rejected": 1,
    }  # fmt: skip
    assert Proposal.objects.filter(study=study).count() == 3


def expected_moderation(group: Group) -> dict:
    """The moderation's counts of a group of two, from the labels and decisions themselves."""
    people = set(group.annotators.values_list("pk", flat=True))
    labels = defaultdict(dict)  # (turn, round) -> {annotator: codes}
    for x in Annotation.objects.current().filter(turn__conversation__groups=group):
        if x.annotator_id in people:
            labels[(x.turn_id, x.round)][x.annotator_id] = x.codes
    turns = list(Turn.objects.filter(conversation__groups=group).values_list("pk", flat=True))
    consensus = {c.turn_id: c.method for c in Consensus.objects.current().filter(group=group)}

    def differ(turn, round):
        got = labels.get((turn, round), {})
        return len(got) == len(people) and len(set(got.values())) > 1

    revised = sum(
        any(labels[(t, 2)][p] != labels[(t, 1)].get(p) for p in labels.get((t, 2), {}))
        for t in turns
        if (t, 2) in labels
    )
    open_states = CardState.objects.filter(group=group, status__in=["disputed", "escalated"])
    return {
        "cards": len(turns),
        "agreed_round_1": sum(m in ("unanimous", "single") for m in consensus.values()),
        "disputed": sum(differ(t, 1) for t in turns),
        "revised": revised,
        "agreed_discussion": sum(m == "discussion" for m in consensus.values()),
        "escalated": sum(differ(t, 2) for t in turns),  # one discussion round
        "moderator": sum(m == "moderator" for m in consensus.values()),
        "open": open_states.count(),
        "proposals": Proposal.objects.filter(turn__conversation__groups=group).count(),
    }


def test_markdown_and_latex_print_the_jsons_numbers(built):
    section = methods("m")
    md, tex = methods("m", "md"), methods("m", "tex")
    check = step(section, "split-check")["data"]["checks"][0]
    accuracy = f"{100 * check['accuracy']:.1f}"
    assert f"{accuracy}%" in md and f"{accuracy}\\%" in tex
    for s in section["steps"]:
        assert f"## {s['title']}" in md and f"\\subsection*{{{s['title']}}}" in tex
    for kappa in column(step(section, "agreement"), "kappa"):
        assert f"{kappa:.3f}" in md and f"{kappa:.3f}" in tex
    assert "Smells \\& more" in tex and "\\toprule" in tex and "\\bottomrule" in tex


def test_it_writes_a_file_and_refuses_an_unknown_study(built, tmp_path):
    out = StringIO()
    path = tmp_path / "methods.tex"

    call_command("methods", "m", "--format", "tex", "--output", str(path), stdout=out)

    assert path.read_text().startswith("% Methods: Smells \\& more")
    assert str(path) in out.getvalue()
    with pytest.raises(CommandError, match="unknown study 'nope'"):
        call_command("methods", "nope")
