"""What an export file holds: its columns and their Arrow types (the Parquet schema, which
every format is built from), and who may have a file: the blindness of the export job's
files. The rows themselves come from gold.py and raw.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import version

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, TextField
from django.db.models.functions import Cast

from taxonomy.models import Type

from ..models import Annotation, Group, Study

EXPORT_FORMATS = ("csv", "jsonl", "parquet")
# annotation rows of the raw export read and written at a time
CHUNK_SIZE = 2000
# cards of the gold export read and written at a time (a query per table each): the memory
# of the export, and each chunk is a Parquet row group. With the turns' texts, the bulk of a
# row (a reply can be kilobytes of code), a tenth as many.
GOLD_CHUNK_SIZE = 20_000
GOLD_TEXT_CHUNK_SIZE = 2000
CSV_EMPTY_SET = "-"
CSV_SEPARATOR = "|"

# a part of a split conversation names the original: its key and the original's index of
# the part's turn 1 (both null for a conversation that is not a part)
SPLIT_COLUMNS = ("split_from", "split_first_turn")
# where the conversation's session ran, from its metadata (`ide`, `cli`; null when no log nor
# the lead told it: annotation/importers/modality.py)
MODALITY_COLUMNS = ("modality",)
# the conversation: its external id (the dataset's, which may repeat) and its key (unique
# in the study: conversation_keys)
CONVERSATION_COLUMNS = ("conversation", "conversation_key")
GOLD_COLUMNS = (
    "study",
    "group",
    *CONVERSATION_COLUMNS,
    "turn",
    *SPLIT_COLUMNS,
    *MODALITY_COLUMNS,
    "consensus",
    "method",
    "decided_by",
    "decided_at",
    "rationale",
    "from_round",
    "taxonomy_version",
    "status",
    # the taxonomy version of the labels_<username> columns (the study's: a label still
    # waiting for its annotator's side of a split type is null there, annotation/evolution)
    "label_taxonomy_version",
    # the card's study-level gold, the same on each of its groups' rows (models.StudyGold):
    # the groups' common set (groups_agree; a card of one group: its consensus), the lead's
    # decision where they differ (lead), "pending" while the lead has not decided
    "study_gold",
    "study_gold_method",
    "study_gold_decided_by",
    "study_gold_decided_at",
    "study_gold_rationale",
)
# "consensus" to "taxonomy_version": all null on a card with no current consensus
CONSENSUS_COLUMNS = GOLD_COLUMNS[GOLD_COLUMNS.index("consensus") : GOLD_COLUMNS.index("status")]
STUDY_GOLD_COLUMNS = GOLD_COLUMNS[GOLD_COLUMNS.index("study_gold") :]
# with_text: the card's text, after the fixed columns (before the labels_<username> ones):
# the user's message, the reply's prose, and the reply's other parts (an agent's thinking,
# tool calls and tool results) as JSON, a list in the order they came ([] for none)
TEXT_COLUMNS = ("user_text", "reply_text", "reply_parts")


def text_values(turn: str = "") -> list:
    """TEXT_COLUMNS as values_list() arguments, on the turn reached by `turn` ("turn__" from
    an annotation): the parts as their JSON text, the same on both databases' paths."""
    return [
        f"{turn}user_text",
        f"{turn}reply_text",
        Cast(f"{turn}reply_parts", output_field=TextField()),
    ]


# an annotation's own fields, under the same names in the raw file
ANNOTATION_FIELDS = ("is_current", "source", "created_at", "note", "evidence", "confidence")
# where the evidence is quoted from (annotation/evidence.py): the turn's index in the
# conversation, "user", "reply" or a reply part (thinking, tool_call, tool_result, with its
# position among the turn's reply parts), [start, end) in its stored text; null for free text
EVIDENCE_SPAN_COLUMNS = (
    "evidence_turn",
    "evidence_part",
    "evidence_part_index",
    "evidence_start",
    "evidence_end",
)
RAW_COLUMNS = (
    "study",
    "group",
    *CONVERSATION_COLUMNS,
    "turn",
    *SPLIT_COLUMNS,
    *MODALITY_COLUMNS,
    "round",
    "annotator",
    "labels",
    *ANNOTATION_FIELDS,
    *EVIDENCE_SPAN_COLUMNS,
    "taxonomy_version",
    # the old codes of a split type whose side the annotator has not chosen yet ("": none);
    # such a row's labels are only the rest of the carried set (annotation/evolution/)
    "split_pending",
)
INT_COLUMNS = {
    "turn",
    "split_first_turn",
    "from_round",
    "round",
    "confidence",
    "evidence_turn",
    "evidence_part_index",
    "evidence_start",
    "evidence_end",
}
BOOL_COLUMNS = {"is_current"}

# -- the episode files (unit episode, issue 21: exports/episodes.py) ------------------------
# an episode's identity, in every row of the episode files: its id, the extraction run it
# came from ("" for a person's), who wrote it (a person's: their username; null for a run's),
# its conversation and its turn range (1-based, inclusive)
EPISODE_ID_COLUMNS = (
    "episode",
    "run",
    "created_by",
    *CONVERSATION_COLUMNS,
    *MODALITY_COLUMNS,
    "first_turn",
    "last_turn",
)
# what an extraction run's model said of its episode: its validator's verdict, labels and
# the extractor's confidence (a float in [0, 1]). The judges' data: blank for whoever may
# not see the machine judges (access.judges_visible_to)
RUN_VERDICT_COLUMNS = ("run_valid", "run_invalid_reason", "run_labels", "confidence")
# gold: one row per episode and group judging it (unit episode), the group's consensus as
# the episode measures read it (annotation/episodes/measures.py)
EPISODE_GOLD_COLUMNS = (
    "study",
    "group",
    *EPISODE_ID_COLUMNS,
    "goal",
    "evidence",
    "status",
    "validity",
    "valid",
    "invalid_reason",
    "method",
    "deciding_round",
    "labels",
    *RUN_VERDICT_COLUMNS,
)
# raw: one row per judgement, all revisions
EPISODE_RAW_COLUMNS = (
    "study",
    "group",
    *EPISODE_ID_COLUMNS,
    "round",
    "annotator",
    "valid",
    "invalid_reason",
    "labels",
    "is_current",
    "source",
    "created_at",
    "taxonomy_version",
)
# coverage: one row per rating, all revisions
COVERAGE_COLUMNS = (
    "study",
    "group",
    *CONVERSATION_COLUMNS,
    *MODALITY_COLUMNS,
    "annotator",
    "rating",
    "is_current",
    "source",
    "created_at",
)
INT_COLUMNS |= {"episode", "first_turn", "last_turn", "deciding_round", "rating"}
BOOL_COLUMNS |= {"valid", "run_valid"}
# the export units: a turn (a card, the default), an episode, a session's coverage ratings
UNITS = ("turn", "episode", "coverage")


def is_raw(unit: str, raw: bool) -> bool:
    """Whether an export of `unit` asked with `raw` is a raw file: the coverage ratings have
    no gold file, their one file is every rating, whatever `raw` says."""
    return raw or unit == "coverage"


def gold_columns(study: Study, round: int = 1, with_text: bool = False) -> list[str]:
    text = list(TEXT_COLUMNS) if with_text else []
    axes = [axis.column for axis in axis_columns(study)]
    return [*GOLD_COLUMNS, *axes, *text, *label_columns(study, round)]


def raw_columns(with_text: bool = False, study: Study | None = None) -> list[str]:
    axes = [axis.column for axis in axis_columns(study)] if study is not None else []
    return [*RAW_COLUMNS, *axes, *(TEXT_COLUMNS if with_text else ())]


@dataclass(frozen=True)
class AxisColumn:
    """One axis's column of a taxonomy of several axes: `<axis>_labels`, the sorted codes of
    a multi-select axis (list<string> like `labels`), or `<axis>_label`, the one code of a
    single-select axis (a string; null for none). The label set (`labels`, `consensus`)
    split by axis; a single-axis taxonomy has none (`labels` is that axis)."""

    column: str
    axis: str
    single: bool
    codes: frozenset[str]

    def pick(self, codes) -> list[str] | str | None:
        """This axis's part of a label set (None stays None: no record)."""
        if codes is None:
            return None
        mine = sorted(c for c in codes if c in self.codes)
        if not self.single:
            return mine
        # a pick-one axis holds one code (check_selection); several would be a bad import,
        # shown rather than hidden
        return CSV_SEPARATOR.join(mine) if mine else None


def axis_columns(study: Study) -> list[AxisColumn]:
    """The per-axis columns of the study's taxonomy, in axis order (none for one axis).
    An axis's codes are those of every version of the taxonomy (codes are stable, so an
    annotation made under an earlier version splits the same way)."""
    version = study.taxonomy_version
    axes = list(version.axes.values_list("code", "multi_select"))
    if len(axes) < 2:
        return []
    codes: dict[str, set[str]] = {}
    for axis, code in Type.objects.filter(
        axis__version__taxonomy_id=version.taxonomy_id
    ).values_list("axis__code", "code"):
        codes.setdefault(axis, set()).add(code)
    return [
        AxisColumn(
            f"{code}_labels" if multi else f"{code}_label",
            code,
            not multi,
            frozenset(codes.get(code, ())),
        )
        for code, multi in axes
    ]


def label_columns(study: Study, round: int = 1) -> list[str]:
    """One `labels_<username>` column per annotator of the study: the groups' annotators
    and anyone who labelled a card in `round` (someone since removed from a group keeps
    their column: their labels are part of the record)."""
    return [f"labels_{name}" for name in label_users(study, round)]


def label_users(study: Study, round: int = 1) -> dict[str, int]:
    """{username: user id} of the `labels_<username>` columns, in column order. One query,
    a probe of the (annotator, round) index per user, not a scan of the study's labels."""
    labelled = Annotation.objects.filter(
        annotator=OuterRef("pk"), round=round, turn__conversation__study=study
    )
    annotates = Group.annotators.through.objects.filter(user=OuterRef("pk"), group__study=study)
    users = get_user_model().objects.filter(Exists(annotates) | Exists(labelled))
    # sorted as Python sorts names, not in the database's collation
    return dict(sorted(users.values_list("username", "pk")))


def is_label_column(name: str) -> bool:
    return (
        name in ("consensus", "labels", "study_gold")
        or name.startswith("labels_")
        or name.endswith("_labels")  # a multi-select axis's column (axis_columns)
    )


def arrow_schema(columns: list[str], floats: frozenset[str] = frozenset()):
    """The columns' Arrow types: label sets are list<string> (null vs [] kept), integers
    int64, `is_current` and the verdicts bool, `floats` (an episode's confidence) float64,
    the rest strings. The schema carries pandas metadata, so that `pandas.read_parquet`
    reads the integers as the nullable "Int64"."""
    import pyarrow as pa  # heavy: only the exports need it

    def field_type(name: str):
        if name in floats:
            return pa.float64()
        if is_label_column(name):
            return pa.list_(pa.string())
        if name in INT_COLUMNS:
            return pa.int64()
        if name in BOOL_COLUMNS:
            return pa.bool_()
        return pa.string()

    return pa.schema(
        [(name, field_type(name)) for name in columns],
        metadata=_pandas_metadata([c for c in columns if c not in floats]),
    )


def _pandas_metadata(columns: list[str]) -> dict[bytes, bytes]:
    """pyarrow gives pandas float64 for an int64 column with a null (NaN), unless the
    file's pandas metadata names the nullable "Int64" dtype for it; only those columns are
    described, pandas takes the others from their Arrow types."""
    described = [
        {
            "name": name,
            "field_name": name,
            "pandas_type": "int64",
            "numpy_type": "Int64",
            "metadata": None,
        }
        for name in columns
        if name in INT_COLUMNS
    ]
    meta = {
        "index_columns": [],
        "column_indexes": [],
        "columns": described,
        "creator": {"library": "cardsort"},
        "pandas_version": version("pandas"),  # without importing pandas
    }
    return {b"pandas": json.dumps(meta).encode()}


# --- who may have a file ----------------------------------------------------------------


def annotates_in(user, study: Study) -> bool:
    """Whether `user` is an annotator of one of the study's groups."""
    return Group.objects.filter(study=study, annotators=user).exists()


def may_download(user, study: Study, result: dict) -> bool:
    """Whether `user` may have the file of an export job whose result is `result`: a user who
    annotates in the study only a file made blind for them (the lead who does not annotate
    may have any). Asked at download time, so joining a group later closes old files."""
    return not annotates_in(user, study) or result.get("blind_for_id") == user.pk
