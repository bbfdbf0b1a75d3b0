"""Every form of the app's pages, one name each: the labels of a card, the discussion and the
moderator's consensus, the lead's groups, assignments and jobs, and proposals of new types."""

from __future__ import annotations

from django import forms

from taxonomy.models import Axis, Type

from .actions.studies import DEFAULT_PRESET, preset_names
from .evidence import EvidenceError, EvidenceSpan, check_span
from .exports import EXPORT_FORMATS, UNITS
from .intake.llm import MAX_EXAMPLES_BYTES, MAX_PROMPT_CHARS, ExamplesError, read_examples
from .limits import TextLimit
from .models import Annotation, Conversation, Group, JobKind, Phase, Proposal, Source, Study


def form_errors(form: forms.Form, sep: str = "; ") -> str:
    """A form's errors in one line, for a message or a refusal's text."""
    return sep.join(e for errs in form.errors.values() for e in errs)


# The confidence scale's points and what each means, shown beside its radio on the card and
# the discussion page (templates/annotation/_confidence.html)
CONFIDENCE: dict[int, str] = {1: "a guess", 2: "unsure", 3: "fairly sure", 4: "sure", 5: "certain"}


class AnnotationForm(forms.Form):
    """A card's labels. Either some types, or "no smell" (an empty set on purpose); nothing
    at all is refused, so a stray Enter never records "no smell" by accident."""

    types = forms.MultipleChoiceField(required=False)
    no_smell = forms.BooleanField(required=False)
    note = forms.CharField(required=False, widget=forms.Textarea, validators=[TextLimit("note")])
    # not stripped here: a quote is compared with its span as posted (_span strips free text)
    evidence = forms.CharField(
        required=False, strip=False, widget=forms.Textarea, validators=[TextLimit("evidence")]
    )
    confidence = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[("", "—")] + [(str(i), f"{i} {word}") for i, word in CONFIDENCE.items()],
    )

    # where the evidence is quoted from (annotation/evidence.py): all four, or none
    evidence_turn = forms.IntegerField(required=False, min_value=1)
    evidence_part = forms.CharField(required=False)
    evidence_start = forms.IntegerField(required=False, min_value=0)
    evidence_end = forms.IntegerField(required=False, min_value=0)
    # a reply part's position (a quote from a tool call, a tool result or thinking)
    evidence_part_index = forms.IntegerField(required=False, min_value=0)

    def __init__(self, *args, types: list[Type], card=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.taxonomy_types = {t.code: t for t in types}
        self.fields["types"].choices = [(t.code, t.name) for t in types]
        self.card = card  # the turn labelled: an evidence span is checked against it

    def clean(self):
        data = super().clean()
        codes = data.get("types") or []
        if data.get("no_smell") and codes:
            raise forms.ValidationError('Choose either types or "no smell", not both.')
        if not data.get("no_smell") and not codes:
            raise forms.ValidationError('Pick at least one type, or "no smell" (key 0).')
        chosen = [self.taxonomy_types[c] for c in codes]
        if chosen:
            try:
                chosen[0].axis.version.check_selection(chosen)
            except ValueError as e:
                raise forms.ValidationError(str(e)) from e
        data["chosen_types"] = chosen
        data["span"] = self._span(data)
        return data

    def _span(self, data: dict) -> EvidenceSpan | None:
        names = ("evidence_turn", "evidence_part", "evidence_start", "evidence_end")
        values = [data.get(n) for n in names]
        if all(v in (None, "") for v in values):
            data["evidence"] = (data.get("evidence") or "").strip()
            return None
        if any(v in (None, "") for v in values) or self.card is None:
            raise forms.ValidationError(
                "Evidence: a quote's span needs its turn, part, start and end; select the "
                "text in a message again and press '."
            )
        span = EvidenceSpan(*values, data.get("evidence_part_index"))
        try:
            data["evidence"] = check_span(self.card, span, data.get("evidence") or "")
        except EvidenceError as e:
            raise forms.ValidationError(str(e)) from e
        return span

    def submit(self, *, turn, group, annotator, round: int = 1):
        """The cleaned labels, submitted from the browser (Annotation.submit: RoundClosed
        when the round is no longer open for them)."""
        d = self.cleaned_data
        return Annotation.submit(
            turn=turn,
            group=group,
            annotator=annotator,
            round=round,
            types=d["chosen_types"],
            note=d["note"],
            evidence=d["evidence"],
            confidence=d["confidence"],
            source=Source.BROWSER,
            span=d.get("span"),
        )


# -- discussion and moderation -------------------------------------------------------------


class CommentForm(forms.Form):
    """A comment of the thread. A Django CharField refuses a NUL byte, which PostgreSQL
    cannot store and SQLite can: both databases answer the same 422."""

    text = forms.CharField(
        label="Comment",
        strip=True,
        error_messages={"required": "Write a comment before sending it."},
        validators=[TextLimit("comment")],
    )


class ConsensusForm(AnnotationForm):
    """The moderator's consensus: the same choice of types as a card (types or "no smell"),
    and a rationale, required, because a decision without a reason cannot be reviewed."""

    rationale = forms.CharField(
        widget=forms.Textarea, strip=True, validators=[TextLimit("rationale")]
    )


class QueueFilter(forms.Form):
    status = forms.ChoiceField(
        required=False,
        choices=[
            ("all", "escalated and disputed"),
            ("escalated", "escalated"),
            ("disputed", "disputed"),
        ],
    )
    group = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    type = forms.ChoiceField(required=False)

    def __init__(self, *args, groups: list[Group], types: list[Type], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].choices = [("", "all my groups")] + [(g.pk, g.name) for g in groups]
        self.fields["type"].choices = [("", "any type")] + [(t.code, t.name) for t in types]


class MyCardsFilter(forms.Form):
    """The annotator's "My cards" filters: the card's state in their group, or whether they
    labelled it, and a text to find in the user's text, the reply or the conversation id."""

    state = forms.ChoiceField(
        required=False,
        choices=[
            ("", "all my cards"),
            ("todo", "to do"),
            ("labelled", "labelled"),
            ("open", "open (round 1)"),
            ("disputed", "disputed"),
            ("escalated", "escalated"),
            ("agreed", "agreed"),
        ],
    )
    q = forms.CharField(required=False, max_length=200, label="Text")


class FlagForm(forms.Form):
    """Why an annotator flags a card for later: the lead reads it."""

    reason = forms.CharField(
        max_length=2000,
        error_messages={
            "required": "Not flagged: say why you flag this card (the lead reads it).",
            "max_length": "Not flagged: the reason is %(show_value)d characters long; keep it "
            "under %(limit_value)d.",
        },
    )


class EpisodeFlagForm(FlagForm):
    """Why an annotator flags an episode for later (views/skip.py episode_flag)."""

    reason = forms.CharField(
        max_length=2000,
        error_messages={
            "required": "Not flagged: say why you flag this episode (the lead reads it).",
            "max_length": FlagForm.base_fields["reason"].error_messages["max_length"],
        },
    )


# -- the lead's jobs -----------------------------------------------------------------------


class AgreementForm(forms.Form):
    round = forms.TypedChoiceField(coerce=int, initial=1)
    # the taxonomy version (id): the study's, or one it moved away from (annotation/evolution/)
    version = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    # the episode measures per value of a conversation metadata field (FIELD:month: by month)
    by = forms.RegexField(regex=r"^[\w.-]{1,64}(:month)?$", required=False, max_length=70)

    def __init__(self, study: Study, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["round"].choices = [(r, r) for r in range(1, study.discussion_rounds + 2)]
        self.fields["version"].choices = [("", "")] + [
            (v.pk, str(v)) for v in study.report_versions()
        ]


class JobFilter(forms.Form):
    """The study page's jobs list: one kind, or all."""

    kind = forms.ChoiceField(required=False, choices=[("", "all kinds"), *JobKind.choices])


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, f) for f in EXPORT_FORMATS])
    raw = forms.BooleanField(required=False)
    with_text = forms.BooleanField(required=False)
    unit = forms.ChoiceField(choices=[(u, u) for u in UNITS], required=False)

    def clean(self):
        data = super().clean()
        data["unit"] = data.get("unit") or "turn"
        return data


# -- the lead's groups and assignments -----------------------------------------------------


class StudyForm(forms.Form):
    """A new study on the studies page; whoever creates it leads it (actions/studies.py)."""

    slug = forms.SlugField(
        max_length=50, help_text="In the study's address: letters, digits, - and _."
    )
    name = forms.CharField(max_length=200, required=False, help_text="Default: the slug.")
    taxonomy = forms.ChoiceField(label="Taxonomy preset", initial=DEFAULT_PRESET)
    phase = forms.ChoiceField(
        initial=Phase.CLOSED_SORT,
        choices=[
            (Phase.CLOSED_SORT, "closed sort: label with the preset's types"),
            (Phase.OPEN_SORT, "open sort: free tags first, types frozen from them"),
        ],
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["taxonomy"].choices = [(name, name) for name in preset_names()]


class GroupForm(forms.ModelForm):
    class Meta:
        model = Group
        fields = ["name", "kind"]


class AssignForm(forms.Form):
    """Assign to one group or to several at once: N unassigned conversations drawn at random
    (to several groups: an overlap share), the selected unassigned ones, or a calibration set
    (the selected conversations to every chosen group, whatever groups they already have)."""

    group = forms.ModelMultipleChoiceField(queryset=Group.objects.none())
    how = forms.ChoiceField(
        choices=[("count", "count"), ("selection", "selection"), ("calibration", "calibration")]
    )
    count = forms.IntegerField(min_value=1, required=False)
    seed = forms.IntegerField(min_value=0, required=False)
    conversation = forms.ModelMultipleChoiceField(
        queryset=Conversation.objects.none(), required=False
    )

    def __init__(self, study: Study, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["group"].queryset = study.groups.all()
        self.fields["conversation"].queryset = Conversation.objects.filter(study=study).visible()

    def clean(self) -> dict:
        data = super().clean()
        if data.get("how") == "count" and not data.get("count"):
            self.add_error("count", "Say how many conversations to assign.")
        if data.get("how") in ("selection", "calibration") and not data.get("conversation"):
            self.add_error("conversation", "Tick the conversations to assign.")
        return data


# -- proposals of new types -----------------------------------------------------------------


class ProposalForm(forms.Form):
    """A new type suggested on a card: all three texts are needed for the experts to judge."""

    name = forms.CharField(max_length=200, error_messages={"required": "Give the type a name."})
    definition = forms.CharField(
        error_messages={"required": "Say what the type means (a definition)."},
        validators=[TextLimit("definition")],
    )
    reason = forms.CharField(
        error_messages={"required": "Say why none of the existing types fits."},
        validators=[TextLimit("reason")],
    )
    axis = forms.CharField(required=False)

    def __init__(self, *args, axes: list[Axis], **kwargs):
        super().__init__(*args, **kwargs)
        self.axes = {a.code: a for a in axes}

    def clean_axis(self) -> Axis | None:
        code = self.cleaned_data.get("axis") or ""
        if not code:
            return None  # the first axis
        if code not in self.axes:
            raise forms.ValidationError(f"Unknown axis {code!r}.")
        return self.axes[code]

    def propose(self, *, study, turn, proposer):
        """The valid form's proposal, as the card's box and the API make it."""
        d = self.cleaned_data
        return Proposal.propose(
            study=study,
            turn=turn,
            proposer=proposer,
            name=d["name"].strip(),
            definition=d["definition"].strip(),
            reason=d["reason"].strip(),
            axis=d["axis"],
        )


class ProposalDecisionForm(forms.Form):
    action = forms.ChoiceField(choices=[("accept", "accept"), ("map", "map"), ("reject", "reject")])
    category = forms.CharField(required=False)  # accept: an existing category name, or "Proposed"
    code = forms.CharField(required=False)  # map: an existing type code
    reason = forms.CharField(required=False, validators=[TextLimit("reason")])

    def clean(self):
        data = super().clean()
        if data.get("action") == "map" and not data.get("code"):
            raise forms.ValidationError("Choose the existing type to map the proposal to.")
        if data.get("action") == "reject" and not (data.get("reason") or "").strip():
            raise forms.ValidationError("A reason is required to reject a proposal.")
        return data


class SplitCheckForm(forms.Form):
    """A split-check study from the source study's entries or split points
    (intake/splitcheck)."""

    unit = forms.ChoiceField(
        label="Each card checks",
        choices=[("entries", "an entry (the study's procedure)"), ("boundaries", "a split point")],
        initial="entries",
        widget=forms.RadioSelect,
    )
    slug = forms.SlugField(label="New study's slug", max_length=50)
    name = forms.CharField(label="Name", max_length=200, required=False)
    n = forms.IntegerField(label="How many to draw", min_value=1)
    seed = forms.IntegerField(label="Seed", initial=0)


# -- sample size (the lead's sample page) ---------------------------------------------------


def _share(label: str, help_text: str) -> forms.FloatField:
    return forms.FloatField(label=label, help_text=help_text)


class SampleSizeForm(forms.Form):
    """The calculator's inputs: Cochran's formula (annotation/intake/sampling.py)."""

    population = forms.IntegerField(label="Population (N)", min_value=0)
    confidence = _share("Confidence", "0.95 for 95%")
    margin = _share("Margin", "0.05 for ±5%")
    proportion = _share("Proportion (p)", "0.5 when unknown: the largest size")

    def _between_0_and_1(self, name: str) -> float:
        value = self.cleaned_data[name]
        if not 0 < value < 1:
            raise forms.ValidationError(
                f"{self.fields[name].label} must be between 0 and 1, both excluded "
                f"({self.fields[name].help_text}); got {value:g}."
            )
        return value

    def clean_confidence(self) -> float:
        return self._between_0_and_1("confidence")

    def clean_margin(self) -> float:
        return self._between_0_and_1("margin")

    def clean_proportion(self) -> float:
        return self._between_0_and_1("proportion")


class SplitForm(forms.Form):
    """The lead's Splitting page: the parameters of `manage.py split_conversations`
    (intake/split_run.py SplitParams), the worked examples as an uploaded JSONL file."""

    min_turns = forms.IntegerField(min_value=2, initial=2, label="Minimum turns")
    model = forms.CharField(required=False, max_length=200, label="Model")
    temperature = forms.FloatField(min_value=0, max_value=2, initial=0, label="Temperature")
    seed = forms.IntegerField(required=False, label="Seed")
    max = forms.IntegerField(required=False, min_value=1, label="At most")
    prompt = forms.CharField(widget=forms.Textarea, label="System prompt", strip=False)
    examples = forms.FileField(required=False, label="Worked examples (JSONL)")
    apply = forms.BooleanField(required=False, label="Apply the proposals when done")

    def clean_prompt(self) -> str:
        prompt = self.cleaned_data["prompt"]
        if not prompt.strip():
            raise forms.ValidationError("The system prompt is empty.")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise forms.ValidationError(f"At most {MAX_PROMPT_CHARS} characters.")
        return prompt

    def clean_examples(self) -> list[dict]:
        """The examples of the uploaded file ([] for none); every bad line as an error."""
        upload = self.cleaned_data.get("examples")
        if not upload:
            return []
        try:
            return read_examples(upload.read(MAX_EXAMPLES_BYTES + 1), upload.name)
        except ExamplesError as exc:
            raise forms.ValidationError(exc.lines) from None
