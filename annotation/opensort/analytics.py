"""Open-sort analytics for the consolidation board (issue 11, point 2): what card-sorting
tools show, computed from the experts' free tags and the board's tag-to-type mapping.

    cooccurrence(uses, tags) -> DataFrame     tags x tags: on how many cards both were used
    similarity(sorted_, placed, cards) -> Similarity   cards x cards: how many experts put
                                              both under one consolidated type, and the share
                                              of the experts who tagged both
    cluster(sim) -> linkage matrix            average linkage on 1 - share (scipy)
    dendrogram_svg(Z, labels, ...) -> str     the tree as SVG (dendrogram.py)
    load_board(study) -> Board                the study's tags, tag sets and board types as
                                              the plain data the functions above take

Everything but load_board is a pure function of plain data (lists, DataFrames, arrays), so
the tests check it against a naive computation and against scipy called directly.

Words: a *tag* is a FreeTag; on the board a merged tag counts as the tag it was merged into
(its *root*, following merged_into), and a tag's consolidated *type* is its root's
BoardType. An expert *sorted* a card when they have a TagSet on it (possibly with no tag:
"no smell"); they *placed* it under a type when one of their tags on it resolves to that type.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.cluster.hierarchy import leaves_list, linkage
from scipy.spatial.distance import squareform

from ..csv_cells import neutralise
from .dendrogram import dendrogram_svg

# the page's matrices show at most this many rows and columns (the CSV has them all)
MAX_SHOWN_CARDS = 80
MAX_SHOWN_TAGS = 60
TOP_PAIRS = 20


# -- the tags on the board -------------------------------------------------------------------


def resolve_roots(merged_into: Mapping[int, int | None]) -> dict[int, int]:
    """Each tag's root: the tag it counts as on the board (itself when not merged), following
    merged_into to its end. A target missing from the mapping (not a tag of the study) is
    ignored: the chain ends at the tag that names it. A cycle (which the board should never
    write) ends at the smallest id on it, so every tag of the cycle has the same root."""
    roots: dict[int, int] = {}
    for start in merged_into:
        path, seen, tag = [], set(), start
        while True:
            if tag in roots:
                root = roots[tag]
                break
            if tag in seen:
                root = min(path[path.index(tag) :])
                break
            seen.add(tag)
            path.append(tag)
            target = merged_into.get(tag)
            if target is None or target not in merged_into:
                root = tag
                break
            tag = target
        for t in path:
            roots[t] = root
    return roots


# -- tag co-occurrence -----------------------------------------------------------------------


def cooccurrence(uses: pd.DataFrame, tags: Sequence[int]) -> pd.DataFrame:
    """The tags x tags matrix: cell (a, b) is the number of cards on which both a and b were
    used, by anyone (the same or different experts); the diagonal is the number of cards a tag
    was used on. `uses` has columns card and tag (board tags: roots), one row per use
    (repeats count once); a tag not in `tags` is left out."""
    n = len(tags)
    pos = pd.Index(tags)
    pairs = uses.loc[:, ["card", "tag"]].drop_duplicates()
    pairs = pairs[pairs["tag"].isin(pos)]
    cards = pd.Index(pairs["card"].unique())
    used = np.zeros((len(cards), n), dtype=np.float64)  # BLAS: exact for counts below 2**53
    used[cards.get_indexer(pairs["card"]), pos.get_indexer(pairs["tag"])] = 1.0
    counts = (used.T @ used).round().astype(np.int64)
    return pd.DataFrame(counts, index=pos, columns=pos)


# -- card-by-card similarity -----------------------------------------------------------------


@dataclass
class Similarity:
    """`same[i, j]`: how many experts put cards i and j under one consolidated type (one of
    their types on i is one of their types on j); `both[i, j]`: how many experts sorted both.
    The diagonal: experts who placed the card under some type, and experts who sorted it."""

    cards: list
    same: np.ndarray
    both: np.ndarray

    @property
    def share(self) -> np.ndarray:
        """same / both; NaN where no expert sorted both cards."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.both > 0, self.same / np.maximum(self.both, 1), np.nan)

    def distance(self) -> np.ndarray:
        """1 - share, a dissimilarity for clustering: 1 (as far apart as can be) where no
        expert sorted both cards, 0 on the diagonal."""
        d = 1.0 - self.share
        d[np.isnan(d)] = 1.0
        np.fill_diagonal(d, 0.0)
        return d


def similarity(sorted_: pd.DataFrame, placed: pd.DataFrame, cards: Sequence) -> Similarity:
    """`sorted_`: columns card, annotator (who sorted which card); `placed`: columns card,
    annotator, type (who put which card under which consolidated type; a row whose (card,
    annotator) is not in `sorted_` counts as sorted too). Cards not in `cards` are left out.
    One matrix product per expert: their cards x types incidence times its transpose."""
    n = len(cards)
    pos = pd.Index(cards)
    # int32: a few thousand cards stay within memory (4 bytes a cell, two matrices)
    same = np.zeros((n, n), dtype=np.int32)
    both = np.zeros((n, n), dtype=np.int32)
    sorted_ = pd.concat(
        [sorted_.loc[:, ["card", "annotator"]], placed.loc[:, ["card", "annotator"]]]
    ).drop_duplicates()
    sorted_ = sorted_[sorted_["card"].isin(pos)]
    placed = placed.loc[placed["card"].isin(pos), ["card", "annotator", "type"]]
    placed = placed.drop_duplicates()
    placed_by = dict(tuple(placed.groupby("annotator")))
    for annotator, rows in sorted_.groupby("annotator"):
        idx = pos.get_indexer(rows["card"].unique())
        both[np.ix_(idx, idx)] += 1
        mine = placed_by.get(annotator)
        if mine is None or mine.empty:
            continue
        mine_cards = pd.Index(mine["card"].unique())
        types = pd.Index(mine["type"].unique())
        incidence = np.zeros((len(mine_cards), len(types)), dtype=np.float64)
        incidence[mine_cards.get_indexer(mine["card"]), types.get_indexer(mine["type"])] = 1.0
        idx = pos.get_indexer(mine_cards)
        same[np.ix_(idx, idx)] += (incidence @ incidence.T > 0.5).astype(np.int32)
    return Similarity(list(cards), same, both)


def cluster(sim: Similarity) -> np.ndarray | None:
    """Average-linkage hierarchical clustering of the cards on 1 - share (scipy's linkage
    over the condensed distance matrix); None with fewer than two cards."""
    if len(sim.cards) < 2:
        return None
    return linkage(squareform(sim.distance(), checks=True), method="average")


def leaf_order(z: np.ndarray | None, n: int) -> list[int]:
    """The cards' positions in the dendrogram's order (similar cards next to each other)."""
    if z is None:
        return list(range(n))
    return [int(i) for i in leaves_list(z)]


# -- CSV -------------------------------------------------------------------------------------


def matrix_csv(corner: str, labels: Sequence[str], values: np.ndarray) -> str:
    """A square matrix as CSV: a header row of labels, then one row per label. Text cells are
    neutralised against formula injection (csv_cells; counts and shares stay numbers); NaN
    is an empty cell, a float is written as its repr (round it first). pandas writes the
    cells: a loop over them in Python took 20 s at 2,000 x 2,000 (still 12 s for floats, 2 s
    for counts)."""
    names = [neutralise(s) for s in labels]
    frame = pd.DataFrame(values, index=pd.Index(names, name=neutralise(corner)), columns=names)
    buf = io.StringIO(newline="")
    # "\r\n" (RFC 4180), and not "\n": the writer quotes a cell holding a character of its
    # line terminator only, so with "\n" a name holding "\r" came out unquoted, and broke rows
    frame.to_csv(buf, lineterminator="\r\n", na_rep="")
    return buf.getvalue()


# -- labels ----------------------------------------------------------------------------------


def unique_labels(labels: Sequence[str], ids: Sequence) -> list[str]:
    """The labels, each one that occurs more than once followed by its id in brackets (two
    conversations may share an external id; two experts may name a tag alike)."""
    counts: dict[str, int] = {}
    for s in labels:
        counts[s] = counts.get(s, 0) + 1
    return [s if counts[s] == 1 else f"{s} [{i}]" for s, i in zip(labels, ids, strict=True)]


# -- the study's data, loaded ----------------------------------------------------------------


@dataclass
class Board:
    """A study's open sort as plain data: the cards someone sorted (turn ids and names), the
    board's tags (roots) with their names and types, and who used what where."""

    cards: list[int] = field(default_factory=list)
    card_names: dict[int, str] = field(default_factory=dict)
    tags: list[int] = field(default_factory=list)  # roots that were used, by id
    tag_names: dict[int, str] = field(default_factory=dict)
    type_names: dict[int, str] = field(default_factory=dict)
    # one row per (card, annotator) with a TagSet: columns card, annotator
    sorted_: pd.DataFrame = field(default_factory=lambda: _frame("card", "annotator"))
    # one row per tag use, resolved: columns card, annotator, tag (root)
    uses: pd.DataFrame = field(default_factory=lambda: _frame("card", "annotator", "tag"))
    # one row per (card, annotator, type): columns card, annotator, type (BoardType id)
    placed: pd.DataFrame = field(default_factory=lambda: _frame("card", "annotator", "type"))

    def card_labels(self) -> list[str]:
        return unique_labels([self.card_names[c] for c in self.cards], self.cards)

    def tag_labels(self) -> list[str]:
        return unique_labels([self.tag_names[t] for t in self.tags], self.tags)


def _frame(*columns: str, rows: Iterable = ()) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(columns), dtype="int64")


def board_from_rows(
    tag_rows: Iterable[tuple],
    set_rows: Iterable[tuple],
    use_rows: Iterable[tuple],
    card_names: Mapping[int, str],
    type_names: Mapping[int, str],
) -> Board:
    """The Board from plain rows: `tag_rows` (id, shown name, author name, merged_into,
    board_type) for every tag of the study; `set_rows` (card, annotator) for every TagSet;
    `use_rows` (card, annotator, tag) for every tag in a TagSet. A merged tag counts as its
    root and takes the root's type; the roots' names get their author's name when two
    roots share a name. The cards come in the order of `card_names`."""
    tag_rows = list(tag_rows)
    roots = resolve_roots({r[0]: r[3] for r in tag_rows})
    info = {r[0]: r for r in tag_rows}
    type_of = {t: info[roots[t]][4] for t in info}
    sorted_ = _frame("card", "annotator", rows=set(set_rows))
    uses = _frame(
        "card", "annotator", "tag", rows={(c, a, roots[t]) for c, a, t in use_rows if t in info}
    )
    placed_rows = {(c, a, type_of[t]) for c, a, t in uses.itertuples(index=False) if type_of.get(t)}
    placed = _frame("card", "annotator", "type", rows=placed_rows)
    # the cards in the order of `card_names` (the loader gives conversation, then turn)
    position = {c: k for k, c in enumerate(card_names)}
    cards = sorted(set(sorted_["card"]) | set(uses["card"]), key=lambda c: (position[c], c))
    used = uses["tag"].value_counts()
    tags = sorted(used.index, key=lambda t: (-int(used[t]), info[t][1].casefold(), t))
    names = [info[t][1] for t in tags]
    tag_names = {
        t: (f"{info[t][1]} ({info[t][2]})" if names.count(info[t][1]) > 1 else info[t][1])
        for t in tags
    }
    return Board(
        cards=cards,
        card_names={c: card_names[c] for c in cards},
        tags=[int(t) for t in tags],
        tag_names=tag_names,
        type_names=dict(type_names),
        sorted_=sorted_,
        uses=uses,
        placed=placed,
    )


def load_board(study) -> Board:
    """The study's open sort, in five queries: its tags, its board types, its TagSets, the
    tags in them, and the names of the cards sorted."""
    # imported here: everything above is plain data and needs no Django
    from ..models import BoardType, FreeTag, TagSet, Turn

    tag_rows = [
        (pk, board_name or name, author, merged_into, board_type)
        for pk, board_name, name, author, merged_into, board_type in FreeTag.objects.filter(
            study=study
        ).values_list("pk", "board_name", "name", "author__username", "merged_into", "board_type")
    ]
    type_names = dict(BoardType.objects.filter(study=study).values_list("pk", "name"))
    sets = TagSet.objects.filter(turn__conversation__study=study)
    set_rows = list(sets.values_list("turn_id", "annotator_id"))
    use_rows = list(
        TagSet.tags.through.objects.filter(tagset__in=sets).values_list(
            "tagset__turn_id", "tagset__annotator_id", "freetag_id"
        )
    )
    card_names = {
        pk: f"{key}#{index}"
        for pk, key, index in Turn.objects.filter(pk__in=sets.values("turn_id"))
        .order_by("conversation_id", "index")
        .values_list("pk", "conversation__key", "index")
    }
    return board_from_rows(tag_rows, set_rows, use_rows, card_names, type_names)


# -- what the page shows ---------------------------------------------------------------------


@dataclass
class Analytics:
    """Everything the analytics partial and the CSV downloads need, computed once."""

    board: Board
    cooc: pd.DataFrame  # tags x tags, in board.tags order
    sim: Similarity  # cards x cards, in board.cards order
    z: np.ndarray | None  # the linkage, None under two cards
    order: list[int]  # card positions in dendrogram order

    @property
    def n_experts(self) -> int:
        return int(self.board.sorted_["annotator"].nunique())

    @property
    def typed(self) -> bool:
        """Whether any card is under a consolidated type yet (else the similarity is 0)."""
        return not self.board.placed.empty

    def cooc_csv(self) -> str:
        return matrix_csv("tag", self.board.tag_labels(), self.cooc.to_numpy())

    def similarity_csv(self, value: str) -> str:
        """`value`: "count" (experts who put both cards under one type) or "share" (of the
        experts who sorted both, to 4 decimals; empty where none did)."""
        labels = self.board.card_labels()
        if value == "share":
            return matrix_csv("card", labels, self.sim.share.round(4))
        return matrix_csv("card", labels, self.sim.same)

    def cooc_table(self, limit: int = MAX_SHOWN_TAGS) -> dict:
        """The most used tags' rows and columns (the board orders tags by use)."""
        labels = self.board.tag_labels()[:limit]
        values = self.cooc.to_numpy()[:limit, :limit]
        rows = [(label, [int(v) for v in row]) for label, row in zip(labels, values, strict=True)]
        return {"labels": labels, "rows": rows, "cut": len(self.board.tags) > limit}

    def cooc_pairs(self, limit: int = TOP_PAIRS) -> list[tuple[str, str, int]]:
        """The pairs of different tags used together on the most cards."""
        labels, m = self.board.tag_labels(), self.cooc.to_numpy()
        i, j = np.triu_indices(len(labels), k=1)
        keep = m[i, j] > 0
        i, j = i[keep], j[keep]
        best = sorted(zip(i, j, strict=True), key=lambda p: (-m[p], p))[:limit]
        return [(labels[a], labels[b], int(m[a, b])) for a, b in best]

    def sim_table(self, limit: int = MAX_SHOWN_CARDS) -> dict:
        """The first cards in dendrogram order (similar cards side by side): each cell is
        (same, both, shade) with shade 0-4 for the share, None where no expert sorted both."""
        labels = self.board.card_labels()
        shown = self.order[:limit]
        share = self.sim.share
        rows = []
        for a in shown:
            cells = []
            for b in shown:
                both = int(self.sim.both[a, b])
                shade = None if both == 0 else min(4, int(share[a, b] * 4 + 0.5))
                cells.append((int(self.sim.same[a, b]), both, shade))
            rows.append((labels[a], cells))
        return {"labels": [labels[a] for a in shown], "rows": rows, "cut": len(labels) > limit}

    def sim_pairs(self, limit: int = TOP_PAIRS) -> list[tuple[str, str, int, int]]:
        """The pairs of cards most often put under one type: by share, then by count."""
        labels, same, both = self.board.card_labels(), self.sim.same, self.sim.both
        i, j = np.triu_indices(len(labels), k=1)
        keep = same[i, j] > 0
        i, j = i[keep], j[keep]
        share = same[i, j] / both[i, j]
        best = np.lexsort((j, i, -same[i, j], -share))[:limit]
        return [(labels[i[k]], labels[j[k]], int(same[i[k], j[k]]), int(both[i[k], j[k]]))
                for k in best]  # fmt: skip

    def dendrogram(self) -> str:
        if self.z is None:
            return ""
        return dendrogram_svg(self.z, self.board.card_labels())


def analyse(board: Board) -> Analytics:
    cooc = cooccurrence(board.uses, board.tags)
    sim = similarity(board.sorted_, board.placed, board.cards)
    z = cluster(sim)
    return Analytics(board, cooc, sim, z, leaf_order(z, len(board.cards)))
