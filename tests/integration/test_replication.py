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
from collections import defaultdict
from dataclasses import dataclass, field
from io import StringIO
from statistics import mean

import pytest
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from annotation.models import (
    Annotation,
    CardState,
    Consensus,
    Conversation,
    SetAside,
    SplitProposal,
    Study,
    Turn,
)
from tests.model_stub import StubServer

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SEED = 20

# A topic's turns: (user, reply). Every coding turn names its language (the coding rules'
# mention of Python, Java, SQL); no chat turn names one.
CODE = {
    "python": [
        ("Fix my Python function that parses dates", "```python\ndef parse(s):\n    return s\n```"),
        (
            "Now add a Python test for it",
            "```python\ndef test_parse():\n    assert parse('x')\n```",
        ),
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


LANGUAGES = {"python": "Python", "java": "Java", "sql": "SQL"}


def entries(study: Study) -> list[Conversation]:
    """The splitting's entries, from the rows: every part, and every original it was asked
    about and left whole."""
    rows = Conversation.objects.filter(study=study).select_related("split_from")
    return [c for c in rows if c.split_from_id or (c.split_considered_by_id
                                                   and c.set_aside != SetAside.SPLIT)]  # fmt: skip


def test_the_sample_holds_only_conversations_about_code(replicated):
    study = replicated["study"]
    sampled = list(Conversation.objects.in_set().filter(study=study).select_related("split_from"))
    assert len(sampled) == step(replicated, "sample")["data"]["n"] > 0
    for c in sampled:
        t, first, last = span_of(c)
        assert any(code for _, code, _ in t.span(first, last)), (c.key, t.topics, first, last)
    # the second filter mattered: every off-topic chat the splitting cut out of a coding
    # conversation was set aside, and none of them is in the sample
    chat_parts = [p for p in Conversation.objects.filter(study=study, split_from__isnull=False)
                  if not any(code for _, code, _ in span_of(p)[0].span(*span_of(p)[1:]))]  # fmt: skip
    assert len(chat_parts) == sum(t.cid[:5] in ("after", "betwe") for t in TRUTH.values()) == 20
    assert {p.set_aside for p in chat_parts} == {SetAside.FILTERED}


def test_the_entry_accuracys_interval_holds_the_true_share(replicated):
    study = replicated["study"]
    population = entries(study)
    truly = [span_of(e)[0].one_topic(*span_of(e)[1:]) for e in population]
    true_share = sum(truly) / len(truly)
    assert 0.8 < true_share < 1  # the model erred on purpose, on a few
    (check,) = step(replicated, "split-check")["data"]["checks"]
    assert check["population"] == len(population)
    low, high = check["accuracy_ci"]
    assert low <= true_share <= high
    # the point: the share of the drawn entries that truly are one topic
    drawn = Conversation.objects.filter(study__slug="repcheck")
    correct = sum(entry_truth(c.metadata["split_check"]) == "correct" for c in drawn)
    assert (check["n"], check["correct"]) == (drawn.count(), correct)


def step(replicated, name: str) -> dict:
    return next(s for s in replicated["methods"]["steps"] if s["step"] == name)


def leaves(value, path=()) -> dict:
    """Every number of a JSON value by its path (booleans are no numbers)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in leaves(item, (*path, key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in leaves(item, (*path, i)).items()}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {path: value}
    return {}


# numbers that are no counts of rows: job ids (named by the rows below where it matters), and
# the bootstrap's intervals and per-type means, which tests/agreement checks against the
# libraries; each is still checked here to be an interval around its point
NOT_COUNTS = re.compile(r"\b(job|agreement_job|kappa_ci|per_label_kappa_(macro|micro)_mean)\b")


def test_every_number_of_the_methods_section_equals_the_rows(replicated):
    study, methods = replicated["study"], replicated["methods"]
    expected = {
        "import": import_numbers(study),
        "filter": filter_numbers(study),
        "splitting": splitting_numbers(study, replicated["stub"]),
        "second-filter": second_filter_numbers(study),
        "split-check": split_check_numbers(study),
        "sample": sample_numbers(study),
        "teams": teams_numbers(study),
        "agreement": agreement_numbers(study),
        "moderation": moderation_numbers(study),
    }
    assert [s["step"] for s in methods["steps"]] == list(expected)
    # every run here was a command's, and says so
    runs = [*step(replicated, "filter")["data"]["runs"], *step(replicated, "splitting")["data"]["jobs"],
            *step(replicated, "second-filter")["data"]["runs"]]  # fmt: skip
    assert {r["via"] for r in runs} == {"command"}
    for s in methods["steps"]:
        got, want = leaves(s["data"]), leaves(expected[s["step"]])
        for path, value in want.items():
            assert got.get(path) == pytest.approx(value, abs=1e-9), (s["step"], path)
        unchecked = [p for p in got if p not in want]
        assert all(NOT_COUNTS.search(".".join(map(str, p))) for p in unchecked), (s["step"],
                                                                                   unchecked)  # fmt: skip
        for row in s["rows"]:  # the table prints the data's numbers, no others
            numbers = {v for v in row if isinstance(v, int | float) and not isinstance(v, bool)}
            assert numbers <= set(got.values()), (s["step"], row)
    for path, ci in leaves_ci(methods):
        point = path[:-1] + ("kappa",)
        assert ci[0] <= dig(methods, point) <= ci[1]


def leaves_ci(methods) -> list:
    out = []
    for s in methods["steps"]:
        for path, _ in leaves(s["data"]).items():
            if path[-2:] == ("kappa_ci", 0):
                out.append(((s["step"], *path[:-1]), dig(methods, (s["step"], *path[:-1]))))
    return out


def dig(methods, path):
    value = next(s["data"] for s in methods["steps"] if s["step"] == path[0])
    for key in path[1:]:
        value = value[key]
    return value


# What each step's numbers must be: from the generator's truth, the files, the stub's
# requests and the rows, computed here without the product's code.
CODING_A = [t for t in TRUTH.values() if t.file == "a" and t.coding]
CHATS = [t for t in TRUTH.values() if not t.coding]
ASKED = [t for t in TRUTH.values() if t.coding and t.n_turns >= 2]
SPLIT = [t for t in ASKED if t.model_splits]


def pieces(t: Truth) -> list[tuple[int, int]]:
    """The original's turns each entry of it holds, as the model cut it."""
    cuts = [1, *t.model_splits, t.n_turns + 1]
    return [(cuts[i], cuts[i + 1] - 1) for i in range(len(cuts) - 1)]


def about_code(t: Truth, first: int, last: int) -> bool:
    return any(code for _, code, _ in t.span(first, last))


def current_after_split() -> list[tuple[Truth, int, int]]:
    """What the second filter scans: the parts and every coding original left whole."""
    whole = [(t, 1, t.n_turns) for t in TRUTH.values() if t.coding and t not in SPLIT]
    return whole + [(t, a, b) for t in SPLIT for a, b in pieces(t)]


def languages(names, spans) -> list[dict]:
    def mentions(name, t, a, b):
        return any(LANGUAGES.get(topic) == name for topic, _, _ in t.span(a, b))

    return [{"language": n, "conversations": sum(mentions(n, *s) for s in spans)} for n in names]


def cochran(population: int) -> dict:
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.975)
    n0 = z * z * 0.25 / 0.05**2
    exact = n0 * population / (n0 + population - 1)
    return {"z": z, "n0": n0, "n_exact": exact, "n": -int(-exact // 1)}


def import_numbers(study: Study) -> dict:
    b = [t for t in TRUTH.values() if t.file == "b"]
    a_all = [t for t in TRUTH.values() if t.file == "a"]
    imports = [
        {"records": len(a_all), "imported": len(CODING_A), "rejected": 0,
         "dropped": len(a_all) - len(CODING_A), "already_imported": 0,
         "in_study": len(CODING_A), "turns": sum(t.n_turns for t in CODING_A)},
        {"records": len(b), "imported": len(b), "rejected": 0, "dropped": 0,
         "already_imported": 0, "in_study": len(b), "turns": sum(t.n_turns for t in b)},
    ]  # fmt: skip
    originals = Conversation.objects.filter(study=study, split_from__isnull=True)
    assert originals.count() == len(CODING_A) + len(b)
    return {"imports": imports, "totals": {
        "conversations": originals.count(), "turns": sum(i["turns"] for i in imports),
        "records": len(TRUTH), "rejected": 0, "dropped": len(a_all) - len(CODING_A),
        "already_imported": 0, "files": 2}}  # fmt: skip


def names_of(study, step_name, path):
    data = step({"methods": methods_of(study)}, step_name)["data"]
    for key in path:
        data = data[key]
    return [e["language"] for e in data]


def methods_of(study: Study) -> dict:
    out = StringIO()
    call_command("methods", study.slug, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def filter_numbers(study: Study) -> dict:
    in_a = [(t, 1, t.n_turns) for t in TRUTH.values() if t.file == "a"]
    in_study = [(t, 1, t.n_turns) for t in TRUTH.values() if t.file == "b" or t.coding]
    b_chats = sum(t.file == "b" and not t.coding for t in TRUTH.values())
    chat_parts = sum(not about_code(*s) for s in current_after_split())
    names = names_of(study, "filter", ["runs", 0, "languages"])
    return {"runs": [
        {"languages": languages(names, in_a), "scanned": len(in_a), "kept": len(CODING_A),
         "dropped": len(in_a) - len(CODING_A),
         "dropped_reasons": {"no language mentioned": len(in_a) - len(CODING_A)}},
        {"languages": languages(names, in_study), "scanned": len(in_study),
         "kept": len(in_study) - b_chats, "dropped": b_chats,
         "dropped_reasons": {"no language mentioned": b_chats}, "set_aside": b_chats,
         "kept_assigned": 0},
    ], "filtered_now": b_chats + chat_parts}  # fmt: skip


def splitting_numbers(study: Study, stub: StubServer) -> dict:
    asked, points = len(ASKED), sum(len(t.model_splits) for t in SPLIT)
    parts = sum(len(pieces(t)) for t in SPLIT)
    assert len(stub.bodies) == asked and {b["temperature"] for b in stub.bodies} == {1.0}
    assert SplitProposal.objects.filter(conversation__study=study, kind="split").count() == points
    assert Conversation.objects.filter(study=study, split_from__isnull=False).count() == parts
    job = {"min_turns": 2, "temperature": 1.0, "seed": 11, "examples": len(EXAMPLES),
           "asked": asked, "answered": asked, "cached": 0, "skipped": 0, "problems": 0,
           "proposed": len(SPLIT), "points": points, "drops": 0,
           "tokens": {"prompt": 100 * asked, "completion": 10 * asked},  # the stub's usage
           "split": len(SPLIT), "parts": parts, "dropped_turns": 0, "refused": 0}  # fmt: skip
    whole = asked - len(SPLIT)
    return {"jobs": [job], "now": {"entries": parts + whole, "split": len(SPLIT), "parts": parts,
            "left_whole": whole, "dropped_turns": 0},
            "proposals": {"split/llm": {"open": 0, "applied": points, "dismissed": 0}}}  # fmt: skip


def second_filter_numbers(study: Study) -> dict:
    spans = current_after_split()
    kept = [s for s in spans if about_code(*s)]
    names = names_of(study, "second-filter", ["runs", 0, "languages"])
    b_chats = sum(t.file == "b" and not t.coding for t in TRUTH.values())
    dropped = len(spans) - len(kept)
    return {"runs": [{"languages": languages(names, spans), "scanned": len(spans),
            "kept": len(kept), "dropped": dropped,
            "dropped_reasons": {"no language mentioned": dropped}, "set_aside": dropped,
            "kept_assigned": 0}], "filtered_now": b_chats + dropped,
            "kept_now": {"conversations": len(kept),
                         "single_turn": sum(b == a for _, a, b in kept),
                         "multi_turn": sum(b > a for _, a, b in kept)}}  # fmt: skip


def round_1(study_slug: str) -> dict:
    """{group: {annotator: {turn id: "sorted,codes"}}} of round 1, from the rows."""
    out = defaultdict(lambda: defaultdict(dict))
    rows = Annotation.objects.current().filter(round=1, turn__conversation__study__slug=study_slug)
    for x in rows.select_related("annotator"):
        for g in x.turn.conversation.groups.all():
            out[g.name][x.annotator.username][x.turn_id] = ",".join(sorted(x.codes))
    return out


def split_check_numbers(study: Study) -> dict:
    population = sum(len(pieces(t)) for t in ASKED)
    n = cochran(population)["n"]
    drawn = Conversation.objects.filter(study__slug="repcheck")
    correct = sum(entry_truth(c.metadata["split_check"]) == "correct" for c in drawn)
    labels = round_1("repcheck")["checkers"]
    turns = sorted(labels["cu1"])
    full = [[labels[u][t] for t in turns] for u in ("cu1", "cu2")]
    binary = [[v == "correct" for v in row] for row in full]
    assert drawn.count() == n == len(turns)
    return {"checks": [{"population": population, "n": n, "seed": 3, "confidence": 0.95,
            "margin": 0.05, "consensus": n, "correct": correct, "accuracy": correct / n,
            "accuracy_ci": list(proportion_confint(correct, n, method="wilson")),
            "kappa": cohen_kappa_score(*binary),
            "kappa_full": cohen_kappa_score(*full)}]}  # fmt: skip


def sample_numbers(study: Study) -> dict:
    pool = [s for s in current_after_split() if about_code(*s) and s[2] > s[1]]
    size = cochran(len(pool))
    return {"population": len(pool), "n": size["n"], "seed": 7, "confidence": 0.95,
            "margin": 0.05, "proportion": 0.5, "min_turns": 2, "earlier_samples": 0,
            "in_set_now": size["n"], "formula": size}  # fmt: skip


GROUPS = {"experts": "expert", "students-a": "student", "students-b": "student"}


def teams_numbers(study: Study) -> dict:
    groups = []
    for name in sorted(GROUPS):
        g = study.groups.get(name=name)
        groups.append({"conversations": g.conversations.count(),
                       "cards": Turn.objects.filter(conversation__groups=g).count()})  # fmt: skip
    assert sum(x["conversations"] for x in groups) == sample_numbers(study)["n"]
    teams = {kind: {k: sum(x[k] for n, x in zip(sorted(GROUPS), groups, strict=True)
                           if GROUPS[n] == kind) for k in ("conversations", "cards")}
             for kind in ("expert", "student")}  # fmt: skip
    return {"groups": groups, "teams": teams}


def agreement_numbers(study: Study) -> dict:
    labels = round_1("rep")
    groups, kappas, shares = {}, defaultdict(list), defaultdict(list)
    for name, kind in GROUPS.items():
        a, b = sorted(labels[name])
        turns = sorted(set(labels[name][a]) & set(labels[name][b]))
        x, y = [labels[name][a][t] for t in turns], [labels[name][b][t] for t in turns]
        kappa, share = cohen_kappa_score(x, y), mean(p == q for p, q in zip(x, y, strict=True))
        groups[name] = {"kappa": kappa, "percent_agreement": share}
        kappas[kind].append(kappa)
        shares[kind].append(share)

    def team(kind):
        k = kappas[kind]
        return {"n_groups": len(k), "n_defined": len(k), "cohen_kappa_mean": mean(k),
                "lowest": min(k), "highest": max(k), "percent_agreement_mean": mean(shares[kind])}  # fmt: skip

    teams = {kind: team(kind) for kind in ("expert", "student")}
    return {"round": 1, "n_boot": 200, "axes": {"type": {"groups": groups, "teams": teams,
            "phases": {"closed_sort": {"student": teams["student"]},
                       "open_sort": {"expert": teams["expert"]}}}}}  # fmt: skip


def moderation_numbers(study: Study) -> dict:
    """From the generator's rules of the labels (student_labels, expert_tags)."""
    groups = {}
    for name in GROUPS:
        g = study.groups.get(name=name)
        cards = list(Turn.objects.filter(conversation__groups=g).values_list("index", flat=True))
        if name == "experts":  # they differ on every second turn, and nobody discussed yet
            disputed = revised = sum(i == 2 for i in cards)
            revised, escalated, open_ = 0, 0, disputed
        else:
            disputed = sum(k % 5 == 0 for k in range(len(cards)))
            revised = sum(k % 5 == 0 and (k // 5) % 2 == 0 for k in range(len(cards)))
            escalated = open_ = disputed - revised
        groups[name] = {"cards": len(cards), "agreed_round_1": len(cards) - disputed,
                        "disputed": disputed, "revised": revised, "agreed_discussion": revised,
                        "escalated": escalated, "moderator": 0, "open": open_, "proposals": 0}  # fmt: skip
    assert CardState.objects.filter(group__study=study, status="escalated").count() == sum(
        g["escalated"] for g in groups.values()
    )
    assert Consensus.objects.current().filter(group__study=study, method="moderator").count() == 0
    totals = {k: sum(g[k] for g in groups.values()) for k in groups["experts"]}
    return {"groups": groups, "totals": totals, "discussion_rounds": 1,
            "proposals": {"made": 0, "pending": 0, "accepted": 0, "mapped": 0, "rejected": 0}}  # fmt: skip
