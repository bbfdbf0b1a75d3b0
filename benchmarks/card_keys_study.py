"""The big study of the card keys benchmark (card_keys_bench.py): N generated coding
conversations of 3-8 turns (Markdown with fenced code in several languages, lists, inline
code), imported with the real importer's bulk path, shared among groups of two annotators,
and half-labelled through the real label import so the tables look like a study under way.
Runs inside a process where Django is set up."""

from __future__ import annotations

import json
import random
from pathlib import Path

SLUG = "bench10k"
PRESET = "interaction-smells"
CODES = ["ambiguous_instruction", "incomplete_instruction", "code_rollback", "must_do_omission"]
# of each group's cards, in queue order: annotator b has labelled the first half, annotator a
# the first tenth (so a's next cards already carry b's labels, and a submit moves them on)
LABELLED_B, LABELLED_A = 0.5, 0.1

TOPICS = [
    ("python", "parse a CSV file and sum a column per region"),
    ("python", "retry a flaky HTTP call with exponential backoff"),
    ("javascript", "debounce the search box of my React component"),
    ("javascript", "read a JSON body in an Express handler"),
    ("sql", "find the customers without an order last month"),
    ("bash", "rename every .jpeg file in a folder to .jpg"),
    ("go", "read a file line by line without loading it all"),
    ("rust", "share a counter between threads"),
]

SNIPPETS = {
    "python": "def {name}(rows):\n    totals = {{}}\n    for row in rows:\n"
    '        key = row["region"]\n        totals[key] = totals.get(key, 0) + float(row["{col}"])\n'
    "    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))\n",
    "javascript": "function {name}(fn, ms = {n}) {{\n  let timer;\n  return (...args) => {{\n"
    "    clearTimeout(timer);\n    timer = setTimeout(() => fn(...args), ms);\n  }};\n}}\n",
    "sql": "SELECT c.id, c.name\nFROM customers c\nLEFT JOIN orders o\n"
    "  ON o.customer_id = c.id AND o.created_at >= date '2024-0{n}-01'\nWHERE o.id IS NULL\n"
    "ORDER BY c.name;\n",
    "bash": 'for f in ./*.jpeg; do\n  mv -- "$f" "${{f%.jpeg}}.jpg"  # {name}\ndone\n',
    "go": "func {name}(path string) error {{\n\tf, err := os.Open(path)\n\tif err != nil {{\n"
    "\t\treturn err\n\t}}\n\tdefer f.Close()\n\ts := bufio.NewScanner(f)\n\tfor s.Scan() {{\n"
    "\t\tfmt.Println(s.Text())\n\t}}\n\treturn s.Err()\n}}\n",
    "rust": "fn {name}() {{\n    let counter = Arc::new(Mutex::new(0));\n"
    "    let handles: Vec<_> = (0..{n}).map(|_| {{\n        let c = Arc::clone(&counter);\n"
    "        thread::spawn(move || *c.lock().unwrap() += 1)\n    }}).collect();\n"
    "    for h in handles {{ h.join().unwrap(); }}\n}}\n",
}


def _code(rng: random.Random, language: str, i: int) -> str:
    body = SNIPPETS[language].format(name=f"step_{i}", col="revenue", n=rng.randint(2, 9))
    fence = language if rng.random() < 0.85 else ""  # some fences name no language
    return f"```{fence}\n{body}```"


def _user(rng: random.Random, language: str, topic: str, t: int) -> str:
    if t == 1:
        text = f"How do I {topic}? I'm using {language} and it has to stay fast."
    else:
        text = rng.choice(
            [
                "That fails with `KeyError: 'region'` on the second file. Can you fix it?",
                "Good, but don't change the signature: other code calls it.",
                "Please keep the earlier fix and also handle an empty input.",
                "Now add a test for it, and explain what **changed**.",
            ]
        )
    if rng.random() < 0.3:
        text += "\n\nHere is what I have now:\n\n" + _code(rng, language, t)
    return text


def _reply(rng: random.Random, language: str, t: int) -> str:
    parts = [
        rng.choice(
            [
                f"The problem is the lookup on line {rng.randint(3, 40)}: the key is missing.",
                "Sure. Here is a version that keeps the *same* signature:",
                "You're right, the earlier version dropped the check. Fixed:",
            ]
        ),
        _code(rng, language, t),
        "What changed:\n\n- the loop no longer mutates its input\n"
        f"- `{language}` idioms instead of the manual index\n- an empty input returns early",
    ]
    if rng.random() < 0.3:
        parts.append("| case | before | after |\n|---|---|---|\n| empty | error | `{}` |")
    if rng.random() < 0.4:
        parts.append(_code(rng, language, t + 100))
    return "\n\n".join(parts)


def write_conversations(path: Path, n: int, seed: int = 20250101) -> int:
    """N native JSONL conversations of 3-8 turns; returns the number of turns."""
    rng = random.Random(seed)
    turns = 0
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            language, topic = rng.choice(TOPICS)
            messages = []
            for t in range(1, rng.randint(3, 8) + 1):
                messages.append({"role": "user", "content": _user(rng, language, topic, t)})
                messages.append({"role": "assistant", "content": _reply(rng, language, t)})
                turns += 1
            f.write(json.dumps({"id": f"conv-{i:05d}", "messages": messages}) + "\n")
    return turns


def build(folder: Path, n_conversations: int, n_groups: int, password: str) -> dict:
    """The study, its 2 x n_groups annotators (g01a, g01b, ...), the conversations shared
    round robin among the groups, and the labels; returns what the benchmark needs."""
    from django.contrib.auth import get_user_model

    from annotation.importers import import_files
    from annotation.models import Conversation, Group, Kind, Role, Seat, Study
    from taxonomy.models import Taxonomy

    study = Study.objects.create(
        slug=SLUG, name="Bench, 10k conversations", taxonomy_version=Taxonomy.load_preset(PRESET)
    )
    conversations = folder / "conversations.jsonl"
    write_conversations(conversations, n_conversations)
    report = import_files(study, [conversations], fmt="native")
    assert not report.errors, report.errors
    User = get_user_model()
    ids = list(study.conversations.order_by("id").values_list("id", flat=True))
    groups = []
    for g in range(1, n_groups + 1):
        group = Group.objects.create(study=study, name=f"Group {g:02d}", kind=Kind.STUDENT)
        for suffix in "ab":
            user = User.objects.create_user(f"g{g:02d}{suffix}", password=password)
            study.add_member(user, Role.ANNOTATOR, Kind.STUDENT)
            group.seat(user, Seat.ANNOTATOR)
        Conversation.objects.filter(pk__in=ids[g - 1 :: n_groups]).assign(group)
        groups.append(group)
    labels = _label(folder, study, groups)
    return {
        "slug": SLUG,
        "conversations": report.conversations,
        "turns": report.turns,
        "groups": n_groups,
        "labels": labels,
        "annotator": "g01a",
    }


def _label(folder: Path, study, groups: list) -> int:
    """Both annotators' labels on the first cards of every group, through the label import
    (the same rules as a submit: card states, consensus)."""
    from annotation.importers.annotations import import_annotations
    from annotation.models import Turn

    rng = random.Random(7)
    path = folder / "labels.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for group in groups:
            cards = list(
                Turn.objects.filter(conversation__assignments__group=group)
                .order_by("conversation_id", "index")
                .values_list("conversation__external_id", "index")
            )
            for suffix, share in (("b", LABELLED_B), ("a", LABELLED_A)):
                annotator = group.name.replace("Group ", "g") + suffix
                for external_id, index in cards[: int(len(cards) * share)]:
                    codes = rng.sample(CODES, rng.choice([0, 1, 1, 2]))
                    record = {"conversation": external_id, "turn": index, "labels": codes}
                    record |= {"annotator": annotator, "round": 1, "group": group.name}
                    f.write(json.dumps(record) + "\n")
    report = import_annotations(study, path)
    assert not report.rejected, report.rejected[:5]
    return report.imported
