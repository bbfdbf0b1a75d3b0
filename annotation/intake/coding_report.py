"""The coding filter's report (issue 10, point 2): what the rules of coding_filter.py keep and
drop over many conversations, per language and per reason, with a few examples of matches and
near misses in context. `CodingFilter` is the one code path of the dry run and of the filtered
import: it is the importer's `keep` predicate and collects the same report either way, so the
two agree; `filter_study` runs it over a study's current conversations, as a dry run or
setting the dropped ones aside."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .coding_filter import Matcher, Mention, rules_digest

EXAMPLES = 3  # per language, of matches and of near misses
EXAMPLES_ASSIGNED = 20  # ids of the conversations kept because a group has them


def built_texts(conversation) -> list[tuple[str, str]]:
    """(where, text) of an importer's BuiltConversation."""
    texts = [("system prompt", conversation.system_prompt)]
    for turn in conversation.turns:
        texts += [(f"turn {turn.index} user", turn.user_text)]
        texts += [(f"turn {turn.index} reply", turn.reply_text)]
    return texts


def stored_texts(conversation) -> list[tuple[str, str]]:
    """(where, text) of a stored Conversation with its turns prefetched."""
    texts = [("system prompt", conversation.system_prompt)]
    for turn in conversation.turns.all():
        texts += [(f"turn {turn.index} user", turn.user_text)]
        texts += [(f"turn {turn.index} reply", turn.reply_text)]
    return texts


NO_MENTION = "no language mentioned"


@dataclass
class FilterReport:
    """What the rules kept and dropped: per language, per reason, with examples. Its memory
    is bounded (EXAMPLES per language), whatever the number of conversations."""

    scanned: int = 0
    matched: int = 0
    per_language: Counter = field(default_factory=Counter)
    dropped_reasons: Counter = field(default_factory=Counter)
    near_misses: dict = field(default_factory=lambda: defaultdict(Counter))
    examples: dict = field(default_factory=lambda: defaultdict(list))
    near_miss_examples: dict = field(default_factory=lambda: defaultdict(list))

    @property
    def dropped(self) -> int:
        return self.scanned - self.matched

    def add(self, label: str, mentions: list[Mention]) -> bool:
        """Count one conversation (`label` names it in examples); True if it matches."""
        self.scanned += 1
        languages = []
        for mention in mentions:
            if mention.accepted and mention.language not in languages:
                languages.append(mention.language)
        kept = bool(languages)
        if kept:
            self.matched += 1
        self.per_language.update(languages)
        reasons: set[str] = set()
        counted: set[tuple[str, str]] = set()
        for mention in mentions:
            if mention.accepted:
                if mention.language in languages:
                    languages.remove(mention.language)  # one example per conversation
                    self._example(self.examples, mention, label, kept)
                continue
            kind = _reason_kind(mention.reason)
            reasons.add(kind)
            if (mention.language, kind) not in counted:
                counted.add((mention.language, kind))
                self.near_misses[mention.language][kind] += 1
                self._example(self.near_miss_examples, mention, label, kept)
        if not kept:
            self.dropped_reasons.update(reasons or {NO_MENTION})
        return kept

    @staticmethod
    def _example(store: dict, mention: Mention, label: str, kept: bool) -> None:
        if len(store[mention.language]) < EXAMPLES:
            example = {"conversation": label, "kept": kept, **mention.snippet()}
            if mention.reason:
                example["reason"] = mention.reason
            store[mention.language].append(example)

    def as_dict(self, rules: dict, languages: list[str]) -> dict:
        return {
            "scanned": self.scanned,
            "matched": self.matched,
            "dropped": self.dropped,
            "dropped_reasons": dict(self.dropped_reasons.most_common()),
            "languages": [
                {
                    "language": language,
                    "conversations": self.per_language.get(language, 0),
                    "near_misses": dict(self.near_misses.get(language, {})),
                    "examples": self.examples.get(language, []),
                    "near_miss_examples": self.near_miss_examples.get(language, []),
                }
                for language in languages
            ],
            "rules_digest": rules_digest(rules),
            "rules": rules,
        }


def _reason_kind(reason: str) -> str:
    """A near miss's reason, without its particulars: how the dropped ones are counted."""
    if reason.startswith("no code context"):
        return "no code context"
    if reason.startswith("part of the stop phrase"):
        return "stop phrase"
    if reason.startswith("inside the word"):
        return "inside a longer word"
    return "case"


class CodingFilter:
    """The importer's `keep` predicate and the dry run over stored conversations, collecting
    one FilterReport either way."""

    def __init__(self, rules: dict) -> None:
        self.matcher = Matcher(rules)
        self.report = FilterReport()

    def mentions(self, texts: list[tuple[str, str]]) -> list[Mention]:
        return [m for where, text in texts for m in self.matcher.scan(where, text)]

    def __call__(self, conversation) -> bool:
        label = f"{conversation.external_id} ({conversation.location})"
        return self.report.add(label, self.mentions(built_texts(conversation)))

    def add_stored(self, conversation) -> bool:
        return self.report.add(conversation.external_id, self.mentions(stored_texts(conversation)))

    def result(self) -> dict:
        return self.report.as_dict(self.matcher.rules, self.matcher.languages)


def filter_study(study, rules: dict, *, apply: bool, progress=None, chunk: int = 500) -> dict:
    """The filter over the study's current conversations (its set: never one already set
    aside, by a sample, a split or an earlier filter), and with `apply` the ones the rules
    drop set aside as `filtered` (reversible: bring_back_filtered). A dry run reads exactly
    what the real run reads, so its counts are the real run's. A conversation already
    assigned to a group is never set aside (its cards may be labelled): it is counted in
    `kept_assigned`. The set-aside happens at the end, in one transaction: a failed run sets
    nothing aside. Returns the report (FilterReport.as_dict) with `applied`, `set_aside`,
    `kept_assigned` and a few of their ids (`kept_assigned_ids`)."""
    from django.db import transaction
    from django.db.models import Exists, OuterRef, Prefetch

    from annotation.models import Assignment, Conversation, SetAside, Turn

    coding = CodingFilter(rules)
    assigned = Assignment.objects.filter(conversation=OuterRef("pk"))
    rows = (
        Conversation.objects.filter(study=study)
        .in_set()
        .annotate(assigned=Exists(assigned))
        .order_by("pk")
    )
    total = rows.count()
    turns = Prefetch("turns", queryset=Turn.objects.order_by("index"))
    drop: list[int] = []
    kept_assigned: list[str] = []
    done = 0
    for conversation in rows.prefetch_related(turns).iterator(chunk_size=chunk):
        if not coding.add_stored(conversation):
            if conversation.assigned:
                kept_assigned.append(conversation.external_id)
            else:
                drop.append(conversation.pk)
        done += 1
        if progress is not None and (done % chunk == 0 or done == total):
            progress(done, total)
    if apply:
        with transaction.atomic():
            for start in range(0, len(drop), chunk):
                Conversation.objects.filter(
                    pk__in=drop[start : start + chunk], set_aside=SetAside.NO
                ).update(set_aside=SetAside.FILTERED)
    return {
        **coding.result(),
        "applied": apply,
        "set_aside": len(drop),
        "kept_assigned": len(kept_assigned),
        "kept_assigned_ids": kept_assigned[:EXAMPLES_ASSIGNED],
    }


def dry_run_study(study, rules: dict, progress=None, chunk: int = 500) -> dict:
    """filter_study without setting anything aside."""
    return filter_study(study, rules, apply=False, progress=progress, chunk=chunk)


def bring_back_filtered(study) -> int:
    """Every conversation the coding filter set aside back in the study's set; how many."""
    from annotation.models import Conversation, SetAside

    rows = Conversation.objects.filter(study=study, set_aside=SetAside.FILTERED)
    return rows.update(set_aside=SetAside.NO)


def report_lines(result: dict) -> list[str]:
    """The dry run as text (the command prints it)."""
    lines = [
        f"Coding filter (rules {result['rules_digest']}): {result['matched']} of "
        f"{result['scanned']} conversations match, {result['dropped']} dropped."
    ]
    if "applied" in result:  # a run over the study (filter_study)
        verb = "set aside" if result["applied"] else "would be set aside"
        lines.append(f"  {result['set_aside']} {verb} (reason: filtered)")
        if result["kept_assigned"]:
            ids = ", ".join(result["kept_assigned_ids"])
            more = result["kept_assigned"] - len(result["kept_assigned_ids"])
            lines.append(
                f"  {result['kept_assigned']} dropped by the rules but kept: assigned to a "
                f"group already ({ids}{f', and {more} more' if more > 0 else ''})"
            )
    for reason, n in result["dropped_reasons"].items():
        lines.append(f"  dropped, {reason}: {n}")
    for entry in result["languages"]:
        if not (entry["conversations"] or entry["near_misses"]):
            continue
        misses = ", ".join(f"{k} {v}" for k, v in entry["near_misses"].items())
        lines.append(
            f"{entry['language']}: {entry['conversations']} conversations"
            + (f"; near misses: {misses}" if misses else "")
        )
        for ex in entry["examples"]:
            lines.append(f"  match    {ex['conversation']} {ex['where']}: {_quote(ex)}")
        for ex in entry["near_miss_examples"]:
            lines.append(
                f"  near miss {ex['conversation']} {ex['where']}: {_quote(ex)} ({ex['reason']})"
            )
    return lines


def _quote(example: dict) -> str:
    return f"{example['before']}[{example['match']}]{example['after']}"
