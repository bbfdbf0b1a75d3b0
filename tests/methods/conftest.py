"""A small study built through the real commands, as docs/method.md runs the study of TAXONOMY.md:
two files imported (one with the coding filter), the coding filter over the study, splitting
with the fake model endpoint (tests/model_stub.py), the second filter, a split check over
entries labelled and computed, a sample, an expert group open-sorting (tags and the board's
freeze from files) and two student groups labelling with discussion rounds, a moderator's
decision and proposals, and agreement saved. The truth of the corpus is known: which
conversations are about code, where each changes topic."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.models import CardState, CardStatus, Conversation, Group, Proposal, Study
from tests.model_stub import fake_model  # noqa: F401 - the fixture

PY = ("Fix my Python function f()", "```python\ndef f():\n    return 1\n```")
PY2 = ("Now add a Python test for it", "```python\ndef test_f():\n    assert f() == 1\n```")
SQL = ("Write a SQL query joining users and orders", "SELECT * FROM users JOIN orders ON 1=1;")
JAVA = ("Write a Java class for a bank account", "public class Account {}")
JAVA2 = ("Add a Java method to deposit money", "void deposit(int amount) {}")
BREAD = ("How do I bake sourdough bread at home?", "Mix flour and water, then wait a day.")
WEATHER = ("What is the weather like in Paris today?", "Sunny and warm.")
JOKE = ("Tell me a joke about cats", "Why did the cat sit on the laptop?")
TRIP = ("Plan my trip to the beach", "Pack sunscreen and a towel.")
NOVEL = ("Recommend a novel about the sea", "Moby-Dick.")

# id -> (turns, where the model splits, turns it drops, the true topics' first turns)
FILE_A = {
    "a0": ([PY, PY2, BREAD], [3], [], [3]),
    "a1": ([PY, PY2, BREAD], [3], [], [3]),
    "a2": ([PY, PY2, SQL], [3], [], [3]),
    "a3": ([PY, PY2, SQL], [3], [], [3]),
    "a4": ([PY, WEATHER, JAVA, JAVA2], [3], [2], [3]),
    "a5": ([PY, PY2], [], [], []),
    "a6": ([JAVA, JAVA2], [], [], []),
    "a7": ([PY, SQL], [], [], [2]),  # the model leaves it whole: wrongly
    "a8": ([PY], [], [], []),
    "n0": ([JOKE, JOKE], [], [], []),
    "n1": ([TRIP], [], [], []),
}
FILE_B = {
    "b0": ([PY, PY2], [], [], []),
    "b1": ([JAVA, JAVA2], [], [], []),
    "b2": ([SQL, SQL], [], [], []),
    "b3": ([PY, PY2], [], [], []),
    "b4": ([PY], [], [], []),
    "b5": ([NOVEL, TRIP], [], [], []),
    "b6": ([JOKE, NOVEL], [], [], []),
}
EXAMPLES = [
    {"turns": [{"user": "sort a list in python", "assistant": "use sorted()"},
               {"user": "now write a SQL join", "assistant": "SELECT ..."}],
     "splits": [{"before_turn": 2, "reason": "SQL is a new task"}]},
    {"turns": [{"user": "fix my loop", "assistant": "here"}], "splits": []},
]  # fmt: skip
CODING = {cid for cid in {**FILE_A, **FILE_B} if cid[0] != "n" and cid not in ("b5", "b6")}


def record(cid: str, turns) -> str:
    messages = []
    for k, (user, reply) in enumerate(turns):
        messages += [
            {"role": "user", "content": f"{cid}: {user}" if k == 0 else user},
            {"role": "assistant", "content": reply},
        ]
    return json.dumps({"id": cid, "messages": messages})


def answer(body: dict) -> str:
    cid = re.search(r"### Turn 1\nUser: (\w+):", body["messages"][-1]["content"])[1]
    _, splits, drops, _ = {**FILE_A, **FILE_B}[cid]
    return json.dumps(
        {"splits": [{"before_turn": k, "reason": "new task"} for k in splits], "drop_turns": drops}
    )


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def write(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def _check_labels(check: Study) -> list[dict]:
    """cu1 labels each entry by the truth; cu2 too but for the first, where it says
    `mixes_topics`."""
    rows = []
    entries = Conversation.objects.filter(study=check).order_by("pk")
    for k, entry in enumerate(entries):
        meta = entry.metadata["split_check"]
        original = meta["original_external_id"]
        truth = {**FILE_A, **FILE_B}[original][3]
        first, last = meta["first_turn"], meta["last_turn"]
        one_topic = not any(first < b <= last for b in truth)
        right = "correct" if one_topic else "should_have_been_split"
        for who in ("cu1", "cu2"):
            said = "mixes_topics" if (who == "cu2" and k == 0 and right == "correct") else right
            rows.append({"conversation": entry.external_id, "turn": 1, "annotator": who,
                         "labels": [said], "group": "checkers"})  # fmt: skip
    return rows


def _expert_tags(study: Study) -> list[dict]:
    experts = Group.objects.get(study=study, name="experts")
    rows = []
    for conversation in experts.conversations.order_by("pk"):
        for turn in conversation.turns.order_by("index"):
            for who in ("ex1", "ex2"):
                tags = ["vague"] if turn.index == 1 else []
                if who == "ex2" and turn.index == 2:
                    tags = ["loop"]
                rows.append({"conversation": conversation.external_id, "turn": turn.index,
                             "group": "experts", "annotator": who, "tags": tags,
                             "no_smell": not tags})  # fmt: skip
    return rows


def _student_labels(study: Study, code: str, other: str) -> tuple[list[dict], list[dict]]:
    """Round 1: the first annotator of a group labels its cards `code` and "no smell" in
    turn; the second the same but on the group's second and third card, where it says
    `other` (disputed). Round 2: on the first disputed card the second comes round to `code`
    (agreed in discussion), on the second both stay (escalated)."""
    first, second = [], []
    for name, (a, b) in {"students-a": ("st1", "st2"), "students-b": ("st3", "st4")}.items():
        group = Group.objects.get(study=study, name=name)
        turns = [t for c in group.conversations.order_by("pk") for t in c.turns.order_by("index")]
        for k, turn in enumerate(turns):
            cid, index = turn.conversation.external_id, turn.index
            base = {"conversation": cid, "turn": index, "group": name}
            mine = [code] if k % 2 == 0 else []
            first.append({**base, "annotator": a, "labels": mine})
            first.append({**base, "annotator": b, "labels": [other] if k in (1, 2) else mine})
            if k == 1:
                second.append({**base, "annotator": a, "labels": [code], "round": 2})
                second.append({**base, "annotator": b, "labels": [code], "round": 2})
            if k == 2:
                second.append({**base, "annotator": a, "labels": mine, "round": 2})
                second.append({**base, "annotator": b, "labels": [other], "round": 2})
    return first, second


@pytest.fixture
def built(tmp_path, fake_model, settings):  # noqa: F811 - the fixture
    """The study `m`, its split check `mcheck`, and what the test needs of them."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    fake_model.answer = answer
    a = write(tmp_path / "a.jsonl", [record(c, v[0]) for c, v in FILE_A.items()]
              + ["{oops", json.dumps({"id": "x", "messages": [{"role": "assistant", "content": "hi"}]})])  # fmt: skip
    b = write(tmp_path / "b.jsonl", [record(c, v[0]) for c, v in FILE_B.items()])
    run("create_study", "m", "--lead", "ada", "--create-user", "--name", "Smells & more")
    run("import_conversations", "m", a, "--filter", "coding")
    run("import_conversations", "m", b)
    run("filter_study", "m", "--filter", "coding")
    examples = write(tmp_path / "examples.jsonl", EXAMPLES)
    run("split_conversations", "m", "--temperature", "1.0", "--seed", "5", "--examples", examples,
        "--apply")  # fmt: skip
    run("filter_study", "m", "--filter", "coding")
    run("create_split_check", "m", "mcheck", "--n", "auto", "--seed", "3")
    run("create_group", "mcheck", "checkers", "--kind", "student")
    run("add_members", "mcheck", "cu1", "cu2", "--role", "annotator", "--kind", "student",
        "--group", "checkers", "--create-users")  # fmt: skip
    run("assign", "mcheck", "--group", "checkers", "--all")
    check = Study.objects.get(slug="mcheck")
    run("import_annotations", "mcheck", write(tmp_path / "check.jsonl", _check_labels(check)))
    run("agreement", "mcheck", "--save", "--bootstrap", "200")
    run("sample", "m", "--n", "10", "--seed", "7")
    run("create_group", "m", "experts", "--kind", "expert", "--phase", "open_sort")
    run("add_members", "m", "mo", "--role", "moderator", "--kind", "expert", "--create-users",
        "--group", "experts")  # fmt: skip
    run("create_group", "m", "students-a", "--kind", "student", "--moderator", "mo")
    run("create_group", "m", "students-b", "--kind", "student")
    for group, kind, people in (("experts", "expert", ["ex1", "ex2"]),
                                ("students-a", "student", ["st1", "st2"]),
                                ("students-b", "student", ["st3", "st4"])):  # fmt: skip
        run("add_members", "m", *people, "--role", "annotator", "--kind", kind, "--group", group,
            "--create-users")  # fmt: skip
    run("assign", "m", "--group", "experts", "--n", "3", "--seed", "1", "--exclude-assigned")
    run("assign", "m", "--group", "students-a", "--n", "4", "--seed", "2", "--exclude-assigned")
    run("assign", "m", "--group", "students-b", "--all", "--exclude-assigned")
    study = Study.objects.get(slug="m")
    run("import_tags", "m", write(tmp_path / "tags.jsonl", _expert_tags(study)))
    mapping = {
        "types": [
            {"name": "Vague request", "category": "Intent", "definition": "unclear"},
            {"name": "Loop", "category": "Replies", "definition": "repeats"},
        ],
        "tags": {"vague": "Vague request", "loop": "Loop"},
    }
    run("freeze_board", "m", "--mapping", write(tmp_path / "map.json", [mapping]), "--by", "ada")
    study.refresh_from_db()
    codes = {t.name: t.code for t in study.taxonomy_version.type_list()}
    first, second = _student_labels(study, codes["Vague request"], codes["Loop"])
    run("import_annotations", "m", write(tmp_path / "r1.jsonl", first))
    run("import_annotations", "m", write(tmp_path / "r2.jsonl", second))
    _moderate_and_propose(study, codes)
    run("agreement", "m", "--save", "--bootstrap", "200")
    return {"study": study, "check": check, "codes": codes, "files": (a, b), "tmp": tmp_path}


def _moderate_and_propose(study: Study, codes: dict) -> None:
    """No command decides a card or a proposal: the moderator of students-a decides its
    escalated card, and three proposals are made and decided as the pages would."""
    from django.contrib.auth import get_user_model

    from annotation.models import Turn

    User = get_user_model()
    mo, ada, st1 = (User.objects.get(username=u) for u in ("mo", "ada", "st1"))
    group = Group.objects.get(study=study, name="students-a")
    state = CardState.objects.get(group=group, status=CardStatus.ESCALATED)
    types = study.taxonomy_version.type_list()
    CardState.decide(state.turn, group, mo, [t for t in types if t.code == codes["Loop"]])
    turn = Turn.objects.filter(conversation__assignments__group=group).first()
    made = [
        Proposal.propose(study=study, turn=turn, proposer=st1, name=f"New {k}",
                         definition="d", reason="r")
        for k in range(3)
    ]  # fmt: skip
    made[0].reject(ada, reason="covered")
    made[1].map_to(ada, codes["Loop"])
