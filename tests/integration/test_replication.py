"""Issue 20's replication: a generated corpus whose truth is known (which topics are about
code, where each conversation changes topic) goes through the study's whole procedure with
the real commands: import with the coding filter, `split_conversations` against a local
model endpoint over real HTTP (tests/model_stub.StubServer) that answers the true boundaries
but for a few it gets wrong on purpose, `filter_study` (the second filter), `create_split_check
--unit entries` labelled from the truth, `sample --n auto`, the study set up by `create_study
--lead`, `add_members`, `assign`, the experts' `import_tags` + `freeze_board`, the students'
`import_annotations`, `agreement --save` and `methods --format json`. It checks what a study
relies on: the sample holds no conversation the truth says is not about code, the entry
accuracy's Wilson interval holds the true share of correct entries, and every number of the
methods section equals a count computed here from the generator's truth and the rows."""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from io import StringIO
from statistics import mean

import pytest
from django.core.management import call_command

from annotation.models import Conversation, Study
from tests.model_stub import StubServer

pytestmark = pytest.mark.django_db

SEED = 20

# A topic's turns: (user, reply). Every coding turn names its language (the coding rules'
# mention of Python, Java, SQL); no chat turn names one.
CODE = {
    "python": [
        ("Fix my Python function that parses dates", "```python\ndef parse(s):\n    return s\n```"),
        ("Now add a Python test for it", "```python\ndef test_parse():\n    assert parse('x')\n```"),
        ("Make the Python code faster", "```python\nfrom functools import cache\n```"),
    ],
    "sql": [
        ("Write a SQL query joining users and orders", "SELECT * FROM users JOIN orders ON 1=1;"),
        ("Add a SQL GROUP BY on the country", "SELECT country, count(*) FROM users GROUP BY 1;"),
    ],
    "java": [
        ("Write a Java class for a bank account", "public class Account {}"),
        ("Add a Java method to deposit money", "void deposit(int amount) {}"),
        ("Now a Java unit test for deposit", "@Test void deposits() {}"),
    ],
}
CHAT = {
    "bread": [
        ("How do I bake sourdough bread at home?", "Mix flour and water, then wait a day."),
        ("And how long should the dough rest?", "Overnight in a cool place."),
    ],
    "trip": [
        ("Plan my trip to the beach", "Pack sunscreen and a towel."),
        ("Which beach towns are quiet in June?", "Small villages on the north coast."),
    ],
    "novel": [
        ("Recommend a novel about the sea", "Moby-Dick."),
        ("Something shorter, please", "The Old Man and the Sea."),
    ],
}


@dataclass
class Truth:
    """One generated conversation: its topics (name, about code, turns) and what the model
    answers about it (split points, before_turn as the splitter numbers them)."""

    cid: str
    topics: list[tuple[str, bool, int]]
    model_splits: list[int] = field(default_factory=list)
    file: str = "a"

    @property
    def n_turns(self) -> int:
        return sum(n for _, _, n in self.topics)

    @property
    def starts(self) -> list[int]:
        """Each topic's first turn (1-based)."""
        out, at = [], 1
        for _, _, n in self.topics:
            out.append(at)
            at += n
        return out

    @property
    def boundaries(self) -> list[int]:
        return self.starts[1:]

    @property
    def coding(self) -> bool:
        return any(code for _, code, _ in self.topics)

    def span(self, first: int, last: int) -> list[tuple[str, bool, int]]:
        """The topics turns first..last touch."""
        return [t for t, s in zip(self.topics, self.starts, strict=True)
                if s <= last and s + t[2] - 1 >= first]  # fmt: skip

    def one_topic(self, first: int, last: int) -> bool:
        """Is turns first..last exactly one topic, whole (the split check's `correct`)?"""
        return any(s == first and s + n - 1 == last
                   for (_, _, n), s in zip(self.topics, self.starts, strict=True))  # fmt: skip

    def turns(self) -> list[tuple[str, str]]:
        out = []
        for name, code, n in self.topics:
            out += (CODE if code else CHAT)[name][:n]
        return out

    def record(self) -> str:
        messages = []
        for k, (user, reply) in enumerate(self.turns()):
            messages += [
                {"role": "user", "content": f"{self.cid}: {user}" if k == 0 else user},
                {"role": "assistant", "content": reply},
            ]
        return json.dumps({"id": self.cid, "messages": messages})


def generate(seed: int = SEED) -> dict[str, Truth]:
    """The corpus: single-topic coding conversations (some of one turn), chats that are not
    about code (in both files: the import's filter drops file a's, the study's filter sets
    file b's aside), two coding topics in one conversation, coding with an off-topic chat
    topic after it or between two coding topics (that chat becomes its own part: only the
    second filter can drop it). The model answers the true boundaries, except that it leaves
    a few two-topic conversations whole and cuts a few single-topic ones in two."""
    rng = random.Random(seed)
    code, chat = sorted(CODE), sorted(CHAT)
    out: dict[str, Truth] = {}

    def add(kind: str, topics, file: str = "a") -> Truth:
        t = Truth(f"{kind}{len(out):03d}", topics, file=file)
        t.model_splits = t.boundaries
        out[t.cid] = t
        return t

    def topic(names, pool, is_code, most):
        name = rng.choice(names)
        return (name, is_code, rng.randint(1, min(most, len(pool[name]))))

    for _ in range(40):
        name = rng.choice(code)
        add("one", [(name, True, rng.randint(2, len(CODE[name])))])
    for _ in range(6):
        add("short", [(rng.choice(code), True, 1)])
    for file in ("a", "b"):
        for _ in range(8):
            add("chat", [topic(chat, CHAT, False, 2)], file=file)
    for _ in range(24):
        first, second = rng.sample(code, 2)
        add("two", [(first, True, rng.randint(1, 2)), (second, True, rng.randint(1, 2))])
    for _ in range(10):
        add("after", [topic(code, CODE, True, 2), topic(chat, CHAT, False, 2)])
    for _ in range(10):
        first, last = rng.sample(code, 2)
        add("between", [(first, True, 1), topic(chat, CHAT, False, 2), (last, True, 1)])
    # the model's mistakes, on purpose: two-topic conversations left whole, single-topic
    # ones of three turns cut after their first
    for t in rng.sample([t for t in out.values() if t.cid.startswith("two")], 5):
        t.model_splits = []
    three = [t for t in out.values() if t.cid.startswith("one") and t.n_turns == 3]
    for t in rng.sample(three, min(3, len(three))):
        t.model_splits = [2]
    return out


TRUTH = generate()


def answer(body: dict) -> str:
    cid = re.search(r"### Turn 1\nUser: (\w+):", body["messages"][-1]["content"])[1]
    splits = [{"before_turn": k, "reason": "a new topic"} for k in TRUTH[cid].model_splits]
    return json.dumps({"splits": splits, "drop_turns": []})


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def write(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def span_of(conversation: Conversation) -> tuple[Truth, int, int]:
    """The truth of a conversation of the study (an original or a part): its original's
    truth and the original's turns it holds."""
    if conversation.split_from_id is None:
        t = TRUTH[conversation.external_id]
        return t, 1, t.n_turns
    original = conversation.split_from
    first = conversation.split_first_turn
    return TRUTH[original.external_id], first, first + conversation.n_turns - 1


EXAMPLES = [
    {"turns": [{"user": "sort a list in python", "assistant": "use sorted()"},
               {"user": "now write a SQL join", "assistant": "SELECT ..."}],
     "splits": [{"before_turn": 2, "reason": "SQL is a new task"}]},
]  # fmt: skip


@pytest.fixture
def replicated(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    a = write(tmp_path / "a.jsonl", [t.record() for t in TRUTH.values() if t.file == "a"])
    b = write(tmp_path / "b.jsonl", [t.record() for t in TRUTH.values() if t.file == "b"])
    examples = write(tmp_path / "examples.jsonl", EXAMPLES)
    run("create_study", "rep", "--lead", "ada", "--create-user", "--name", "Replication")
    run("import_conversations", "rep", a, "--filter", "coding")
    run("import_conversations", "rep", b)
    run("filter_study", "rep", "--filter", "coding")
    with StubServer(answer) as stub:
        settings.CARDSORT_LLM_BASE_URL = stub.base_url
        settings.CARDSORT_LLM_MODEL = "stub-model"
        settings.CARDSORT_LLM_API_KEY = "sk-test"
        settings.CARDSORT_LLM_RPM = 0
        run("split_conversations", "rep", "--temperature", "1.0", "--seed", "11",
            "--examples", examples, "--apply")  # fmt: skip
    run("filter_study", "rep", "--filter", "coding")
    run("create_split_check", "rep", "repcheck", "--unit", "entries", "--n", "auto",
        "--seed", "3")  # fmt: skip
    run("create_group", "repcheck", "checkers", "--kind", "student")
    run("add_members", "repcheck", "cu1", "cu2", "--role", "annotator", "--kind", "student",
        "--group", "checkers", "--create-users")  # fmt: skip
    run("assign", "repcheck", "--group", "checkers", "--all")
    first, second = check_labels(Study.objects.get(slug="repcheck"))
    run("import_annotations", "repcheck", write(tmp_path / "check1.jsonl", first))
    run("import_annotations", "repcheck", write(tmp_path / "check2.jsonl", second))
    run("agreement", "repcheck", "--save", "--bootstrap", "200")

    run("sample", "rep", "--n", "auto", "--seed", "7", "--min-turns", "2")
    run("create_group", "rep", "experts", "--kind", "expert", "--phase", "open_sort")
    run("create_group", "rep", "students-a", "--kind", "student", "--moderator", "ada")
    run("create_group", "rep", "students-b", "--kind", "student")
    for group, kind, people in (("experts", "expert", ["ex1", "ex2"]),
                                ("students-a", "student", ["st1", "st2"]),
                                ("students-b", "student", ["st3", "st4"])):  # fmt: skip
        run("add_members", "rep", *people, "--role", "annotator", "--kind", kind, "--group", group,
            "--create-users")  # fmt: skip
    run("add_members", "rep", "mo", "--role", "moderator", "--kind", "expert", "--group",
        "students-b", "--create-users")  # fmt: skip
    run("assign", "rep", "--group", "experts", "--n", "8", "--seed", "1", "--exclude-assigned")
    run("assign", "rep", "--group", "students-a", "--n", "20", "--seed", "2", "--exclude-assigned")
    run("assign", "rep", "--group", "students-b", "--all", "--exclude-assigned")
    study = Study.objects.get(slug="rep")
    run("import_tags", "rep", write(tmp_path / "tags.jsonl", expert_tags(study)))
    run("freeze_board", "rep", "--mapping", write(tmp_path / "map.json", [MAPPING]), "--by", "ada")
    study.refresh_from_db()
    codes = {t.name: t.code for t in study.taxonomy_version.type_list()}
    first, second = student_labels(study, codes["Vague request"], codes["Loop"])
    run("import_annotations", "rep", write(tmp_path / "r1.jsonl", first))
    run("import_annotations", "rep", write(tmp_path / "r2.jsonl", second))
    run("agreement", "rep", "--save", "--bootstrap", "200")
    out = StringIO()
    call_command("methods", "rep", "--format", "json", stdout=out)
    return {"stub": stub, "tmp": tmp_path, "study": study, "methods": json.loads(out.getvalue()),
            "examples": examples, "files": (a, b)}  # fmt: skip


def entry_truth(meta: dict) -> str:
    """What an annotator who knows the truth answers about an entry."""
    t = TRUTH[meta["original_external_id"]]
    first, last = meta["first_turn"], meta["last_turn"]
    if t.one_topic(first, last):
        return "correct"
    if len(t.span(first, last)) > 1:
        return "should_have_been_split" if first == 1 and last == t.n_turns else "mixes_topics"
    (start,) = [s for s in t.starts if s <= first][-1:]
    return "starts_too_late" if first > start else "ends_too_early"


CHECK_DISAGREES = 9  # cu2 says otherwise on every 9th entry in round 1, then comes round


def check_labels(check: Study) -> tuple[list[dict], list[dict]]:
    first, second = [], []
    for k, entry in enumerate(Conversation.objects.filter(study=check).order_by("pk")):
        truth = entry_truth(entry.metadata["split_check"])
        base = {"conversation": entry.external_id, "turn": 1, "group": "checkers"}
        other = "other" if truth == "correct" else "correct"
        said = other if k % CHECK_DISAGREES == 0 else truth
        first += [{**base, "annotator": "cu1", "labels": [truth]},
                  {**base, "annotator": "cu2", "labels": [said]}]  # fmt: skip
        if said != truth:
            second += [{**base, "annotator": u, "labels": [truth], "round": 2}
                       for u in ("cu1", "cu2")]  # fmt: skip
    return first, second


MAPPING = {
    "types": [
        {"name": "Vague request", "category": "Intent", "definition": "unclear"},
        {"name": "Loop", "category": "Replies", "definition": "repeats"},
    ],
    "tags": {"vague": "Vague request", "loop": "Loop"},
}


def expert_tags(study: Study) -> list[dict]:
    """ex1 tags every first turn `vague`; ex2 too, and every second turn `loop`."""
    rows = []
    group = study.groups.get(name="experts")
    for conversation in group.conversations.order_by("pk"):
        for turn in conversation.turns.order_by("index"):
            for who in ("ex1", "ex2"):
                tags = ["vague"] if turn.index == 1 else []
                if who == "ex2" and turn.index == 2:
                    tags = ["loop"]
                rows.append({"conversation": conversation.key, "turn": turn.index,
                             "group": "experts", "annotator": who, "tags": tags,
                             "no_smell": not tags})  # fmt: skip
    return rows


def student_labels(study: Study, code: str, other: str) -> tuple[list[dict], list[dict]]:
    """Round 1: the first of a group's two labels every even card `code` and every odd one
    nothing; the second the same but on every 5th card, where it says `other` (disputed).
    Round 2: on the even disputed cards the second comes round (agreed in discussion), on the
    odd ones both keep their labels (escalated)."""
    first, second = [], []
    for name, (a, b) in {"students-a": ("st1", "st2"), "students-b": ("st3", "st4")}.items():
        group = study.groups.get(name=name)
        turns = [t for c in group.conversations.order_by("pk") for t in c.turns.order_by("index")]
        for k, turn in enumerate(turns):
            base = {"conversation": turn.conversation.key, "turn": turn.index, "group": name}
            mine = [code] if k % 2 == 0 else []
            theirs = [other] if k % 5 == 0 else mine
            first += [{**base, "annotator": a, "labels": mine},
                      {**base, "annotator": b, "labels": theirs}]  # fmt: skip
            if theirs != mine:
                came = mine if (k // 5) % 2 == 0 else theirs
                second += [{**base, "annotator": a, "labels": mine, "round": 2},
                           {**base, "annotator": b, "labels": came, "round": 2}]  # fmt: skip
    return first, second


def test_dump(replicated):
    for s in replicated["methods"]["steps"]:
        print(s["step"], json.dumps(s["data"]), s["rows"])


def test_debug(replicated):
    for e in Conversation.objects.filter(study__slug="repcheck"):
        m = e.metadata["split_check"]
        if entry_truth(m) != "correct":
            t = TRUTH[m["original_external_id"]]
            print(m["original_external_id"], m["first_turn"], m["last_turn"], t.topics, t.model_splits, entry_truth(m))
