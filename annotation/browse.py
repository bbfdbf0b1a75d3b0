"""The lead's conversation browser: which conversations match a search (text, source, model,
language, group, card state, number of turns), the choices its form offers (the values
present in the study), and one conversation's cards with their state and, once they have
left round 1, their labels, as one user may see them (access.py decides blindness).

Where the importers keep the model and the language (annotation/importers/):
- on the conversation (`Conversation.metadata`): `model` and `language` of WildChat and
  LMSYS, `model` of ShareGPT (FastChat), any top-level key of an OpenAI record, the
  `metadata` object of a native record;
- on the turn (`Turn.metadata`): the per-message metadata of native and OpenAI messages (an
  agent log's `model`) and WildChat's per-utterance `language`; the reply's value goes under
  `reply_<key>` when the user message had another (importers/base.py `_merge_metadata`).
A conversation matches a model or a language named on it or on any of its turns. Values are
compared case-blind (`GPT-4` is `gpt-4`), and the spellings that mean "no language" (LMSYS
`unknown`, WildChat `Nolang` for an empty conversation) are one choice."""

from __future__ import annotations

from dataclasses import dataclass, field

from django import forms
from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Substr

from .access import round1_hidden_from, round1_hidden_q
from .browse_pages import COUNT_CAP, Results
from .models import (
    Annotation,
    Assignment,
    CardState,
    CardStatus,
    Consensus,
    Conversation,
    Group,
    Study,
    StudyFigures,
    StudyGold,
    Turn,
    study_conversation_counts,
    study_gold_of,
)

# a value longer than this is not a name (a whole JSON object kept as text): not a choice
MAX_VALUE_LENGTH = 100
SNIPPET_LENGTH = 160
CHOICES_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Facet:
    """A metadata key the lead filters on: where it lives, and which spellings are one value."""

    name: str
    conversation_keys: tuple[str, ...]
    turn_keys: tuple[str, ...]
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    alias_labels: dict[str, str] = field(default_factory=dict)

    def canonical(self, raw) -> str | None:
        if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_VALUE_LENGTH:
            return None
        value = raw.strip().lower()
        return next((c for c, spellings in self.aliases.items() if value in spellings), value)

    def matches(self, spellings: list[str]) -> Q:
        """Conversations that name one of `spellings` (as stored) on themselves or a turn."""
        on_conversation = Q()
        for key in self.conversation_keys:
            on_conversation |= Q(**{f"metadata__{key}__in": spellings})
        on_turn = Q()
        for key in self.turn_keys:
            on_turn |= Q(**{f"metadata__{key}__in": spellings})
        turns = Turn.objects.filter(on_turn, conversation_id=OuterRef("pk"))
        return on_conversation | Q(Exists(turns))


MODEL = Facet("model", ("model",), ("model", "reply_model"))
LANGUAGE = Facet(
    "language",
    ("language",),
    ("language", "reply_language"),
    aliases={"unknown": ("unknown", "nolang")},
    alias_labels={"unknown": "unknown (no language detected)"},
)
FACETS = (MODEL, LANGUAGE)


@dataclass
class Choices:
    """What the study holds, for the filter form: sources, and for each facet {canonical
    value: the spellings stored}."""

    sources: list[str]
    values: dict[str, dict[str, set[str]]]

    @classmethod
    def of(cls, study: Study) -> Choices:
        """The study's choices, read once per state of its conversations: reading them is a
        DISTINCT over every conversation's and turn's metadata (half a second at 10,000
        conversations: the JSON is stored compressed), and they change only when an import
        adds conversations or a partial one is removed (metadata is never edited). One
        query when cached, whatever the study's size: its conversations (kept figures),
        those of imports under way (an import's size) and the last visible one's id. Ids
        only grow, so a conversation added moves the last id, one removed the number (and
        an import done, the number under way)."""
        conversations = Conversation.objects.filter(study=study)
        last = conversations.visible().order_by("-id").values("id")[:1]
        under_way = conversations.under_way().values("study_id").annotate(n=Count("id")).values("n")
        stamp = (
            StudyFigures.objects.filter(study=study)
            .values_list("conversations")
            .annotate(last=Subquery(last), under_way=Subquery(under_way))
            .values_list("conversations", "under_way", "last")
            .first()
        )
        key = "browse-choices:" + ":".join(str(part) for part in (study.pk, *(stamp or ())))
        choices = cache.get(key)
        if choices is None:
            choices = cls.read(study)
            cache.set(key, choices, CHOICES_SECONDS)
        return choices

    @classmethod
    def read(cls, study: Study) -> Choices:
        """Two DISTINCT queries (conversations, turns): the facets' keys and the sources."""
        conv = [KT(f"metadata__{k}") for f in FACETS for k in f.conversation_keys]
        rows = (
            Conversation.objects.filter(study=study)
            .visible()
            .values_list("source_format", *conv)
            .distinct()
            .order_by()
        )
        found: dict[str, set] = {f.name: set() for f in FACETS}
        sources = set()
        for source, *raw in rows:
            sources.add(source)
            for f, value in zip(_by_key(FACETS, "conversation_keys"), raw, strict=True):
                found[f.name].add(value)
        turn = [KT(f"metadata__{k}") for f in FACETS for k in f.turn_keys]
        rows = (
            Turn.objects.filter(conversation__study=study)
            .visible()
            .values_list(*turn)
            .distinct()
            .order_by()
        )
        for raw in rows:
            for f, value in zip(_by_key(FACETS, "turn_keys"), raw, strict=True):
                found[f.name].add(value)
        values: dict[str, dict[str, set[str]]] = {}
        for f in FACETS:
            values[f.name] = {}
            for raw in found[f.name]:
                if (value := f.canonical(raw)) is not None:
                    values[f.name].setdefault(value, set()).add(raw)
        return cls(sorted(sources), values)

    def options(self, facet: Facet) -> list[tuple[str, str]]:
        """(value, label) pairs, the label as the data spells the value."""
        out = []
        for value, raws in sorted(self.values[facet.name].items()):
            label = facet.alias_labels.get(value) or (value if value in raws else min(raws))
            out.append((value, label))
        return out


def _by_key(facets, attr: str) -> list[Facet]:
    """The facet of each column a values_list over `attr` keys reads, in order."""
    return [f for f in facets for _ in getattr(f, attr)]


STATES = [
    ("", "any state"),
    (CardStatus.OPEN, "open (round 1)"),
    (CardStatus.DISPUTED, "disputed"),
    (CardStatus.ESCALATED, "escalated"),
    (CardStatus.AGREED, "agreed"),
]
NO_GROUP = "none"
COUNT_ALL = "all"  # the browser's `count`: every match of the text counted, however many
UNKNOWN = "unknown"  # the modality filter: conversations no log nor lead told it of


class BrowseFilter(forms.Form):
    """The browser's GET form; every field optional, the choices those of the study."""

    q = forms.CharField(
        required=False,
        max_length=200,
        label="Text contains",
        help_text="in any turn's user message or reply, or the external id",
        widget=forms.TextInput(attrs={"type": "search"}),
    )
    source = forms.ChoiceField(required=False, label="Source")
    model = forms.ChoiceField(required=False, label="Model")
    language = forms.ChoiceField(required=False, label="Language")
    # where the session ran (conversation metadata: importers/modality.py)
    modality = forms.ChoiceField(
        required=False,
        label="Modality",
        choices=[("", "any modality"), ("ide", "ide"), ("cli", "cli"), (UNKNOWN, "not known")],
    )
    group = forms.ChoiceField(required=False, label="Group")
    state = forms.ChoiceField(
        required=False,
        label="Card state",
        choices=STATES,
        help_text="a card in this state in some group (the chosen one, if any)",
    )
    min_turns = forms.IntegerField(required=False, min_value=1, label="Turns from")
    max_turns = forms.IntegerField(required=False, min_value=1, label="Turns to")
    # a search's results are counted up to browse_pages.COUNT_CAP unless all are asked for
    count = forms.ChoiceField(
        required=False,
        choices=[("", f"up to {COUNT_CAP:,}"), (COUNT_ALL, "all")],
        widget=forms.HiddenInput,
    )

    def __init__(self, *args, choices: Choices, groups: list[Group], **kwargs):
        super().__init__(*args, **kwargs)
        self.choices = choices
        self.fields["source"].choices = [("", "any source")] + [(s, s) for s in choices.sources]
        for facet in FACETS:
            self.fields[facet.name].choices = [("", f"any {facet.name}")] + choices.options(facet)
        self.fields["group"].choices = [("", "any group"), (NO_GROUP, "no group (unassigned)")] + [
            (str(g.pk), g.name) for g in groups
        ]

    def clean(self) -> dict:
        data = super().clean()
        low, high = data.get("min_turns"), data.get("max_turns")
        if low is not None and high is not None and low > high:
            raise forms.ValidationError(
                f"Turns: asked for at least {low} turns and at most {high}; no conversation "
                "can match. Swap the two numbers or clear one."
            )
        return data

    def errors_in_words(self) -> list[str]:
        """Each error with the label of the field it is about."""
        out = []
        for name, errors in self.errors.items():
            label = self.fields[name].label if name in self.fields else ""
            out += [f"{label}: {e}" if label else e for e in errors]
        return out

    def query_string(self) -> list[tuple[str, str]]:
        """The filters as asked (non-empty fields, in the form's order), for page links."""
        return [(n, self.data[n]) for n in self.fields if self.data.get(n, "") != ""]

    def conversations(self, study: Study) -> QuerySet[Conversation]:
        """The study's conversations that match every filter, in import order."""
        return self.results(study).everything

    def results(self, study: Study) -> Results:
        """The search as asked (browse_pages.Results): the conversations matching every
        filter but the text, the text, and whether all its matches are to be counted."""
        f = self.cleaned_data
        filtered = any(f.get(name) not in ("", None) for name in self.fields if name != "count")
        # no filter at all: the study's visible conversations, counted by the kept figures
        total = None if filtered else study_conversation_counts(study)["conversations"]
        return Results(self._others(study), f.get("q", ""), f.get("count") == COUNT_ALL, total)

    def _others(self, study: Study) -> QuerySet[Conversation]:
        f = self.cleaned_data
        rows = Conversation.objects.filter(study=study).visible()
        if f.get("source"):
            rows = rows.filter(source_format=f["source"])
        for facet in FACETS:
            if f.get(facet.name):
                spellings = sorted(self.choices.values[facet.name][f[facet.name]])
                rows = rows.filter(facet.matches(spellings))
        group_id = int(f["group"]) if f.get("group") not in ("", None, NO_GROUP) else None
        if f.get("group") == NO_GROUP:
            rows = rows.unassigned()
        elif group_id is not None:
            assigned = Assignment.objects.filter(conversation_id=OuterRef("pk"), group_id=group_id)
            rows = rows.filter(Exists(assigned))
        if f.get("state"):
            rows = rows.filter(_has_card_in(f["state"], group_id))
        if f.get("modality") == UNKNOWN:
            rows = rows.filter(Q(metadata__modality__isnull=True))
        elif f.get("modality"):
            rows = rows.filter(metadata__modality=f["modality"])
        if f.get("min_turns") is not None:
            rows = rows.filter(n_turns__gte=f["min_turns"])
        if f.get("max_turns") is not None:
            rows = rows.filter(n_turns__lte=f["max_turns"])
        return rows.order_by("id")


def _turns_with(text: str) -> QuerySet[Turn]:
    """The turns of the outer conversation whose user message or reply contains `text` (a
    result row's first match: the conversation's few turns, by its index)."""
    found = Q(user_text__icontains=text) | Q(reply_text__icontains=text)
    return Turn.objects.filter(found, conversation_id=OuterRef("pk"))


def _has_card_in(status: str, group_id: int | None) -> Q:
    """Conversations with a card in `status` in some group they are assigned to (`group_id`:
    that group). A card nobody has labelled in a group has no state row there: it is open."""
    if status != CardStatus.OPEN:
        states = CardState.objects.filter(turn__conversation_id=OuterRef("pk"), status=status)
        if group_id is not None:
            states = states.filter(group_id=group_id)
        return Q(Exists(states))
    left_round_1 = CardState.objects.filter(
        turn_id=OuterRef("pk"), group_id=OuterRef(OuterRef("group_id"))
    ).exclude(status=CardStatus.OPEN)
    open_cards = Turn.objects.filter(conversation_id=OuterRef("conversation_id")).exclude(
        Exists(left_round_1)
    )
    assignments = Assignment.objects.filter(conversation_id=OuterRef("pk"))
    if group_id is not None:
        assignments = assignments.filter(group_id=group_id)
    return Q(Exists(assignments.filter(Exists(open_cards))))


# -- one page of results ----------------------------------------------------------------------


def page_rows(ids: list[int], text: str) -> list[Conversation]:
    """The conversations of one page of results (`ids`, read by the paginator from the
    search alone: the subqueries below would otherwise run for every row an OFFSET skips),
    with what a row shows and its cards' states per group."""
    rows = list(with_summary(Conversation.objects.filter(pk__in=ids), text).order_by("id"))
    state_counts(rows)
    return rows


def with_summary(rows: QuerySet[Conversation], text: str) -> QuerySet[Conversation]:
    """What a result row shows: the first user message (cut), the model and language (the
    conversation's, else its first turn's), the modality and tool, and the first turn
    matching `text`."""

    def on_turns(key: str):
        named = Turn.objects.filter(
            conversation_id=OuterRef("pk"), **{f"metadata__{key}__isnull": False}
        )
        return Subquery(named.order_by("index").values(value=KT(f"metadata__{key}"))[:1])

    first = Turn.objects.filter(conversation_id=OuterRef("pk"), index=1)
    rows = rows.annotate(
        opening=Subquery(first.values(text=Substr("user_text", 1, SNIPPET_LENGTH))[:1]),
        model=Coalesce(KT("metadata__model"), on_turns("model")),
        language=Coalesce(KT("metadata__language"), on_turns("language")),
        modality=KT("metadata__modality"),
        tool=KT("metadata__tool"),
    ).defer("metadata", "preamble", "system_prompt")
    if text:
        hit = _turns_with(text).order_by("index").values("index")[:1]
        rows = rows.annotate(hit=Subquery(hit))
    return rows.prefetch_related("groups")


def state_counts(conversations: list[Conversation]) -> None:
    """Set `c.by_group` on each: [(group, {status: cards})], open counting the cards with no
    state row. Two queries for the page: its turns, then their states by turn (the index on
    a state's card). One join of the two was planned, on PostgreSQL at 1,000,000
    conversations, as a scan of every state row (30 ms, for a page's 150 cards: the
    planner's guess of the turns a conversation has was seven times too many)."""
    counts: dict[tuple[int, int], dict[str, int]] = {}
    turns = dict(
        Turn.objects.filter(conversation__in=[c.pk for c in conversations]).values_list(
            "pk", "conversation_id"
        )
    )
    rows = (
        CardState.objects.filter(turn_id__in=list(turns))
        .values_list("turn_id", "group_id", "status")
        .order_by()
    )
    for turn_id, group_id, status in rows:
        per_status = counts.setdefault((turns[turn_id], group_id), {})
        per_status[status] = per_status.get(status, 0) + 1
    for c in conversations:
        c.by_group = []
        for g in sorted(c.groups.all(), key=lambda g: g.name):
            n = dict(counts.get((c.pk, g.pk), {}))
            n[CardStatus.OPEN] = c.n_turns - sum(v for s, v in n.items() if s != CardStatus.OPEN)
            c.by_group.append((g, [(s, n[s]) for s, _ in STATES[1:] if n.get(s)]))


# -- one conversation, card by card -------------------------------------------------------------


HIDDEN_ROUND_1 = "labels hidden until the card leaves round 1"
HIDDEN_YOURS = (
    "labels hidden: you label this card, and it is still in round 1 in your group "
    "(round 1 is blind)"
)


@dataclass
class GroupCard:
    """A card in one group: its state and, when they may be seen, the group's labels."""

    group: Group
    state: CardState | None
    hidden: str = ""  # why the labels are not shown ("" when they are)
    labellers: list[tuple[str, bool, list[Annotation]]] = field(default_factory=list)
    consensus: Consensus | None = None

    @property
    def status(self) -> str:
        return self.state.status if self.state else CardStatus.OPEN

    @property
    def round(self) -> int:
        return self.state.round if self.state else 1


@dataclass
class Card:
    turn: Turn
    groups: list[GroupCard]
    hidden: bool  # the user labels it blind: no study gold either
    gold: list | None = None  # the study gold's types, when there is one
    gold_method: str | None = None  # groups_agree, lead, "pending" or None
    gold_row: StudyGold | None = None


def conversation_cards(user, study: Study, conversation: Conversation) -> list[Card]:
    """Every card of `conversation` with its state in each group it is assigned to and,
    where `user` may see them, the labels: a group's labels once the card has left round 1
    in it, and nothing of anyone else's on a card `user` labels blind (access.py)."""
    turns = list(conversation.turns.order_by("index"))
    groups = list(conversation.groups.order_by("name").prefetch_related("annotators", "judges"))
    of_conversation = {"turn__conversation": conversation}
    states = {(s.turn_id, s.group_id): s for s in CardState.objects.filter(**of_conversation)}
    hidden = {
        r["pk"] for r in round1_hidden_from(user, study).filter(conversation_id=conversation.pk)
    }
    labels = (
        Annotation.objects.current()
        .filter(**of_conversation)
        .exclude(round1_hidden_q(user, study))
        .select_related("annotator")
        .prefetch_related("types")
        .order_by("annotator__username", "round")
    )
    by_turn: dict[int, list[Annotation]] = {}
    for a in labels:
        by_turn.setdefault(a.turn_id, []).append(a)
    consensus = {
        (c.turn_id, c.group_id): c
        for c in Consensus.objects.current()
        .filter(**of_conversation)
        .select_related("decided_by")
        .prefetch_related("types")
    }
    gold = {
        g.turn_id: g
        for g in StudyGold.objects.current()
        .filter(**of_conversation)
        .select_related("decided_by")
        .prefetch_related("types")
    }
    cards = []
    for turn in turns:
        card = Card(turn, [], turn.pk in hidden)
        for group in groups:
            card.groups.append(
                _group_card(group, states.get((turn.pk, group.pk)), card.hidden, by_turn, consensus)
            )
        if not card.hidden:
            _set_gold(card, gold.get(turn.pk), len(groups))
        cards.append(card)
    return cards


def _group_card(group, state, hidden, by_turn, consensus) -> GroupCard:
    card = GroupCard(group, state)
    if card.status == CardStatus.OPEN:
        card.hidden = HIDDEN_ROUND_1
        return card
    if hidden:
        card.hidden = HIDDEN_YOURS
        return card
    annotators = {u.pk for u in group.annotators.all()}
    judges = {u.pk for u in group.judges.all()}
    rows: dict[int, list[Annotation]] = {}
    for a in by_turn.get(state.turn_id, []):
        if a.annotator_id in annotators | judges:
            rows.setdefault(a.annotator_id, []).append(a)
    card.labellers = [
        (rounds[0].annotator.username, pk in judges and pk not in annotators, rounds)
        for pk, rounds in rows.items()
    ]
    card.consensus = consensus.get((state.turn_id, group.pk))
    return card


def _set_gold(card: Card, decided: StudyGold | None, n_groups: int) -> None:
    """The study-level gold (models.study_gold_of): the lead's decision, else the groups'
    common consensus once every group has decided."""
    if decided is not None:
        card.gold, card.gold_method, card.gold_row = list(decided.types.all()), "lead", decided
        return
    decisions = [g.consensus for g in card.groups if g.consensus is not None]
    _, method = study_gold_of([c.codes for c in decisions], n_groups, None)
    card.gold_method = method
    if method is not None and method != "pending":
        card.gold = list(decisions[0].types.all())
