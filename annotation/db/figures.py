"""The triggers that keep the kept figures (models/figures.py; issue 25), for migration
0031_leadpages_figures: PostgreSQL gets statement-level triggers over transition tables (a
COPY of a million conversations moves a figure once, not a million times), SQLite row-level
ones. Both written from the same rules:

- a study's or a group's row is made with the study or group;
- conversations: + on insert, - on delete, - old + new on update (conversations, turns, set
  aside, and `unassigned`: in the set with no assignment); a change of n_turns moves the
  cards of the groups the conversation is assigned to;
- assignments: the group's conversations and cards; the study's `unassigned` when a
  conversation in the set gets its first group or loses its last;
- card states: the group's cards by status, - old + new;
- annotations and consensus: the study's `label_writes`, by one per row written; annotations:
  its `labels`, + a current one written, - one no longer current or deleted.

An assignment's conversation is never changed in place (the app inserts and deletes them):
an UPDATE of one moves the groups' figures, not `unassigned`."""

from __future__ import annotations

STATUSES = ("open", "disputed", "escalated", "agreed")  # GroupFigures' columns: CardStatus
SF, GF = "annotation_studyfigures", "annotation_groupfigures"
CONV, ASSIGN, STATE = "annotation_conversation", "annotation_assignment", "annotation_cardstate"
TURN, GROUP = "annotation_turn", "annotation_group"

# --- PostgreSQL: statement-level, over the statement's rows (transition tables) -------------


def _pg_function(name: str, body: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}\nRETURN NULL;\nEND $$;"
    )


def _pg_trigger(name: str, table: str, event: str, body: str) -> list[str]:
    refs = {"INSERT": "NEW TABLE AS new_rows", "DELETE": "OLD TABLE AS old_rows"}
    refs["UPDATE"] = "OLD TABLE AS old_rows NEW TABLE AS new_rows"
    return [
        _pg_function(name, body),
        f"DROP TRIGGER IF EXISTS {name} ON {table};",
        f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {refs[event]} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {name}();",
    ]


def _pg_conversations(rows: str, sign: str) -> str:
    return f"""
UPDATE {SF} f SET conversations = f.conversations {sign} d.c, turns = f.turns {sign} d.t,
  set_aside = f.set_aside {sign} d.s, unassigned = f.unassigned {sign} d.u
FROM (SELECT r.study_id, count(*) AS c, sum(r.n_turns) AS t,
        count(*) FILTER (WHERE r.set_aside <> '') AS s,
        count(*) FILTER (WHERE r.set_aside = '' AND NOT EXISTS (
          SELECT 1 FROM {ASSIGN} a WHERE a.conversation_id = r.id)) AS u
      FROM {rows} r GROUP BY r.study_id) d
WHERE f.study_id = d.study_id;"""


def _pg_groups(rows: str, sign: str) -> str:
    return f"""
UPDATE {GF} g SET conversations = g.conversations {sign} d.c, cards = g.cards {sign} d.t
FROM (SELECT r.group_id, count(*) AS c, COALESCE(sum(c.n_turns), 0) AS t
      FROM {rows} r LEFT JOIN {CONV} c ON c.id = r.conversation_id GROUP BY r.group_id) d
WHERE g.group_id = d.group_id;"""


def _pg_states(select: str) -> str:
    sets = ", ".join(f'"{s}" = g."{s}" + d."{s}"' for s in STATUSES)
    sums = ", ".join(
        f"sum(CASE WHEN status = '{s}' THEN k ELSE 0 END) AS \"{s}\"" for s in STATUSES
    )
    return f"""
UPDATE {GF} g SET {sets}
FROM (SELECT group_id, {sums} FROM ({select}) x GROUP BY group_id) d
WHERE g.group_id = d.group_id;"""


def _pg_writes(rows: str, study_of: str) -> str:
    return f"""
UPDATE {SF} f SET label_writes = f.label_writes + d.n
FROM (SELECT {study_of} AS study_id, count(*) AS n FROM {rows} r {_JOIN[study_of]}
      GROUP BY 1) d
WHERE f.study_id = d.study_id;"""


def _pg_labels(rows: str, sign: str) -> str:
    return f"""
UPDATE {SF} f SET labels = f.labels {sign} d.n
FROM (SELECT c.study_id, count(*) AS n FROM {rows} r {_JOIN[_STUDY_OF_TURN]}
      WHERE r.is_current GROUP BY 1) d
WHERE f.study_id = d.study_id;"""


_STUDY_OF_TURN = "c.study_id"
_STUDY_OF_GROUP = "gr.study_id"
_JOIN = {
    _STUDY_OF_TURN: f"JOIN {TURN} t ON t.id = r.turn_id JOIN {CONV} c ON c.id = t.conversation_id",
    _STUDY_OF_GROUP: f"JOIN {GROUP} gr ON gr.id = r.group_id",
}


def postgresql(labels: bool = True) -> list[str]:
    """The trigger functions and triggers; `labels=False`: without the `labels` count (the
    functions before migration 0038, put back when it is reversed)."""
    out: list[str] = []
    out += _pg_trigger(
        "lp_study_ins",
        "annotation_study",
        "INSERT",
        f"INSERT INTO {SF} (study_id, conversations, turns, set_aside, unassigned, label_writes)"
        " SELECT id, 0, 0, 0, 0, 0 FROM new_rows ON CONFLICT DO NOTHING;",
    )
    zeros = ", ".join("0" for _ in STATUSES)
    columns = ", ".join(f'"{s}"' for s in STATUSES)
    out += _pg_trigger(
        "lp_group_ins",
        GROUP,
        "INSERT",
        f"INSERT INTO {GF} (group_id, conversations, cards, {columns})"
        f" SELECT id, 0, 0, {zeros} FROM new_rows ON CONFLICT DO NOTHING;",
    )
    out += _pg_trigger("lp_conv_ins", CONV, "INSERT", _pg_conversations("new_rows", "+"))
    out += _pg_trigger(
        "lp_conv_del", CONV, "DELETE", _pg_conversations("old_rows", "-") + _PG_CARDS_GONE
    )
    turns_moved = f"""
UPDATE {GF} g SET cards = g.cards + d.t
FROM (SELECT a.group_id, sum(n.n_turns - o.n_turns) AS t
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      JOIN {ASSIGN} a ON a.conversation_id = n.id
      WHERE n.n_turns <> o.n_turns GROUP BY a.group_id) d
WHERE g.group_id = d.group_id;"""
    out += _pg_trigger(
        "lp_conv_upd",
        CONV,
        "UPDATE",
        _pg_conversations("old_rows", "-") + _pg_conversations("new_rows", "+") + turns_moved,
    )
    first_group = f"""
UPDATE {SF} f SET unassigned = f.unassigned - d.u
FROM (SELECT c.study_id, count(*) AS u
      FROM (SELECT conversation_id, count(*) AS k FROM new_rows GROUP BY conversation_id) n
      JOIN {CONV} c ON c.id = n.conversation_id
      WHERE c.set_aside = '' AND (SELECT count(*) FROM {ASSIGN} a
                                  WHERE a.conversation_id = n.conversation_id) = n.k
      GROUP BY c.study_id) d
WHERE f.study_id = d.study_id;"""
    last_group = f"""
UPDATE {SF} f SET unassigned = f.unassigned + d.u
FROM (SELECT c.study_id, count(*) AS u
      FROM (SELECT DISTINCT conversation_id FROM old_rows) o
      JOIN {CONV} c ON c.id = o.conversation_id
      WHERE c.set_aside = '' AND NOT EXISTS (
        SELECT 1 FROM {ASSIGN} a WHERE a.conversation_id = o.conversation_id)
      GROUP BY c.study_id) d
WHERE f.study_id = d.study_id;"""
    out += _pg_trigger("lp_assign_ins", ASSIGN, "INSERT", _pg_groups("new_rows", "+") + first_group)
    out += _pg_trigger("lp_assign_del", ASSIGN, "DELETE", _pg_groups("old_rows", "-") + last_group)
    out += _pg_trigger(
        "lp_assign_upd",
        ASSIGN,
        "UPDATE",
        _pg_groups("old_rows", "-") + _pg_groups("new_rows", "+"),
    )
    out += _pg_trigger(
        "lp_state_ins", STATE, "INSERT", _pg_states("SELECT group_id, status, 1 AS k FROM new_rows")
    )
    out += _pg_trigger(
        "lp_state_del",
        STATE,
        "DELETE",
        _pg_states("SELECT group_id, status, -1 AS k FROM old_rows"),
    )
    out += _pg_trigger(
        "lp_state_upd",
        STATE,
        "UPDATE",
        _pg_states(
            "SELECT group_id, status, 1 AS k FROM new_rows "
            "UNION ALL SELECT group_id, status, -1 FROM old_rows"
        ),
    )
    for table, study_of, short in (
        ("annotation_annotation", _STUDY_OF_TURN, "ann"),
        ("annotation_consensus", _STUDY_OF_GROUP, "cons"),
    ):
        for event, rows in (("INSERT", "new_rows"), ("UPDATE", "new_rows"), ("DELETE", "old_rows")):
            body = _pg_writes(rows, study_of)
            if short == "ann" and labels:
                body += _PG_LABELS[event]
            out += _pg_trigger(f"lp_{short}_{event[:3].lower()}", table, event, body)
    return out


_PG_LABELS = {
    "INSERT": _pg_labels("new_rows", "+"),
    "UPDATE": _pg_labels("old_rows", "-") + _pg_labels("new_rows", "+"),
    "DELETE": _pg_labels("old_rows", "-"),
}


# --- SQLite: row-level ------------------------------------------------------------------------


def _lite_trigger(name: str, table: str, event: str, body: str, when: str = "") -> list[str]:
    when = f" WHEN {when}" if when else ""
    return [
        f"DROP TRIGGER IF EXISTS {name};",
        f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW{when}\nBEGIN\n{body}\nEND;",
    ]


def _lite_conversation(row: str, sign: str) -> str:
    return f"""
UPDATE {SF} SET conversations = conversations {sign} 1, turns = turns {sign} {row}.n_turns,
  set_aside = set_aside {sign} ({row}.set_aside <> ''),
  unassigned = unassigned {sign} ({row}.set_aside = '' AND NOT EXISTS (
    SELECT 1 FROM {ASSIGN} a WHERE a.conversation_id = {row}.id))
WHERE study_id = {row}.study_id;"""


def _lite_group(row: str, sign: str) -> str:
    # no conversation: it went first (a raw DELETE, `flush`), its cards with it
    return f"""
UPDATE {GF} SET conversations = conversations {sign} 1,
  cards = cards {sign} COALESCE((SELECT n_turns FROM {CONV} WHERE id = {row}.conversation_id), 0)
WHERE group_id = {row}.group_id;"""


# A conversation deleted before its assignments (a raw DELETE; `flush` empties the tables in
# an order of its own, foreign keys checked at commit) takes its cards from the groups it is
# still assigned to; the assignments' own deletion then finds no conversation and takes none.
# Django's cascade deletes the assignments first: then none is left here.
_LITE_CARDS_GONE = f"""
UPDATE {GF} SET cards = cards - OLD.n_turns
WHERE group_id IN (SELECT group_id FROM {ASSIGN} WHERE conversation_id = OLD.id);"""
_PG_CARDS_GONE = f"""
UPDATE {GF} g SET cards = g.cards - d.t
FROM (SELECT a.group_id, sum(o.n_turns) AS t
      FROM old_rows o JOIN {ASSIGN} a ON a.conversation_id = o.id GROUP BY a.group_id) d
WHERE g.group_id = d.group_id;"""


def _lite_state(row: str, sign: str) -> str:
    sets = ", ".join(f'"{s}" = "{s}" {sign} ({row}.status = \'{s}\')' for s in STATUSES)
    return f"UPDATE {GF} SET {sets} WHERE group_id = {row}.group_id;"


def _lite_writes(row: str, study_of: str) -> str:
    return f"UPDATE {SF} SET label_writes = label_writes + 1 WHERE study_id = ({study_of});"


def sqlite(labels: bool = True) -> list[str]:
    """The triggers; `labels=False`: without the `labels` count (before migration 0038)."""
    out: list[str] = []
    out += _lite_trigger(
        "lp_study_ins",
        "annotation_study",
        "INSERT",
        f"INSERT OR IGNORE INTO {SF} (study_id, conversations, turns, set_aside, unassigned, "
        "label_writes) VALUES (NEW.id, 0, 0, 0, 0, 0);",
    )
    columns = ", ".join(f'"{s}"' for s in STATUSES)
    zeros = ", ".join("0" for _ in STATUSES)
    out += _lite_trigger(
        "lp_group_ins",
        GROUP,
        "INSERT",
        f"INSERT OR IGNORE INTO {GF} (group_id, conversations, cards, {columns}) "
        f"VALUES (NEW.id, 0, 0, {zeros});",
    )
    out += _lite_trigger("lp_conv_ins", CONV, "INSERT", _lite_conversation("NEW", "+"))
    out += _lite_trigger(
        "lp_conv_del", CONV, "DELETE", _lite_conversation("OLD", "-") + _LITE_CARDS_GONE
    )
    out += _lite_trigger(
        "lp_conv_upd",
        CONV,
        "UPDATE",
        _lite_conversation("OLD", "-")
        + _lite_conversation("NEW", "+")
        + f"""
UPDATE {GF} SET cards = cards + NEW.n_turns - OLD.n_turns
WHERE group_id IN (SELECT group_id FROM {ASSIGN} WHERE conversation_id = NEW.id);""",
        when="OLD.n_turns <> NEW.n_turns OR OLD.set_aside <> NEW.set_aside "
        "OR OLD.study_id <> NEW.study_id",
    )
    out += _lite_trigger(
        "lp_assign_ins",
        ASSIGN,
        "INSERT",
        _lite_group("NEW", "+")
        + f"""
UPDATE {SF} SET unassigned = unassigned - 1
WHERE study_id = (SELECT study_id FROM {CONV} WHERE id = NEW.conversation_id AND set_aside = '')
  AND (SELECT count(*) FROM {ASSIGN} WHERE conversation_id = NEW.conversation_id) = 1;""",
    )
    out += _lite_trigger(
        "lp_assign_del",
        ASSIGN,
        "DELETE",
        _lite_group("OLD", "-")
        + f"""
UPDATE {SF} SET unassigned = unassigned + 1
WHERE study_id = (SELECT study_id FROM {CONV} WHERE id = OLD.conversation_id AND set_aside = '')
  AND NOT EXISTS (SELECT 1 FROM {ASSIGN} WHERE conversation_id = OLD.conversation_id);""",
    )
    out += _lite_trigger(
        "lp_assign_upd", ASSIGN, "UPDATE", _lite_group("OLD", "-") + _lite_group("NEW", "+")
    )
    out += _lite_trigger("lp_state_ins", STATE, "INSERT", _lite_state("NEW", "+"))
    out += _lite_trigger("lp_state_del", STATE, "DELETE", _lite_state("OLD", "-"))
    out += _lite_trigger(
        "lp_state_upd",
        STATE,
        "UPDATE",
        _lite_state("OLD", "-") + _lite_state("NEW", "+"),
        when="OLD.status <> NEW.status OR OLD.group_id <> NEW.group_id",
    )
    of_turn = (
        f"SELECT c.study_id FROM {TURN} t JOIN {CONV} c ON c.id = t.conversation_id "
        "WHERE t.id = {row}.turn_id"
    )
    of_group = f"SELECT study_id FROM {GROUP} WHERE id = {{row}}.group_id"
    for table, study_of, short in (
        ("annotation_annotation", of_turn, "ann"),
        ("annotation_consensus", of_group, "cons"),
    ):
        for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
            body = _lite_writes(row, study_of.format(row=row))
            if short == "ann" and labels:
                moved = {"INSERT": [("NEW", "+")], "DELETE": [("OLD", "-")]}
                moved["UPDATE"] = [("OLD", "-"), ("NEW", "+")]
                body += "".join(
                    f"\nUPDATE {SF} SET labels = labels {sign} {r}.is_current "
                    f"WHERE study_id = ({study_of.format(row=r)});"
                    for r, sign in moved[event]
                )
            out += _lite_trigger(f"lp_{short}_{event[:3].lower()}", table, event, body)
    return out


# --- the figures counted afresh: the backfill, and the property test's recount ---------------


def recount(labels: bool = True) -> list[str]:
    """Statements that set every figure from the rows (label_writes kept: it only counts);
    `labels=False`: but the `labels` count (before migration 0038)."""
    current = (
        f"SELECT count(*) FROM annotation_annotation a JOIN {TURN} t ON t.id = a.turn_id "
        f"JOIN {CONV} c ON c.id = t.conversation_id "
        f"WHERE c.study_id = {SF}.study_id AND a.is_current"
    )
    unassigned = (
        f"SELECT count(*) FROM {CONV} c WHERE c.study_id = {SF}.study_id AND c.set_aside = '' "
        f"AND NOT EXISTS (SELECT 1 FROM {ASSIGN} a WHERE a.conversation_id = c.id)"
    )
    states = ", ".join(
        f'"{s}" = (SELECT count(*) FROM {STATE} x WHERE x.group_id = {GF}.group_id '
        f"AND x.status = '{s}')"
        for s in STATUSES
    )
    columns = ", ".join(f'"{s}"' for s in STATUSES)
    zeros = ", ".join("0" for _ in STATUSES)
    return [
        f"INSERT INTO {SF} (study_id, conversations, turns, set_aside, unassigned, label_writes) "
        f"SELECT id, 0, 0, 0, 0, 0 FROM annotation_study WHERE id NOT IN "
        f"(SELECT study_id FROM {SF});",
        f"INSERT INTO {GF} (group_id, conversations, cards, {columns}) "
        f"SELECT id, 0, 0, {zeros} FROM {GROUP} WHERE id NOT IN (SELECT group_id FROM {GF});",
        f"UPDATE {SF} SET "
        f"conversations = (SELECT count(*) FROM {CONV} c WHERE c.study_id = {SF}.study_id), "
        f"turns = (SELECT COALESCE(sum(c.n_turns), 0) FROM {CONV} c "
        f"WHERE c.study_id = {SF}.study_id), "
        f"set_aside = (SELECT count(*) FROM {CONV} c WHERE c.study_id = {SF}.study_id "
        f"AND c.set_aside <> ''), "
        f"unassigned = ({unassigned})" + (f", labels = ({current});" if labels else ";"),
        f"UPDATE {GF} SET "
        f"conversations = (SELECT count(*) FROM {ASSIGN} a WHERE a.group_id = {GF}.group_id), "
        f"cards = (SELECT COALESCE(sum(c.n_turns), 0) FROM {ASSIGN} a JOIN {CONV} c "
        f"ON c.id = a.conversation_id WHERE a.group_id = {GF}.group_id), {states};",
    ]


def drop(vendor: str) -> list[str]:
    names = ["lp_study_ins", "lp_group_ins", "lp_conv_ins", "lp_conv_del", "lp_conv_upd"]
    names += ["lp_assign_ins", "lp_assign_del", "lp_assign_upd"]
    names += ["lp_state_ins", "lp_state_del", "lp_state_upd"]
    names += [f"lp_{t}_{e}" for t in ("ann", "cons") for e in ("ins", "upd", "del")]
    if vendor == "postgresql":
        return [f"DROP FUNCTION IF EXISTS {name}() CASCADE;" for name in names]
    return [f"DROP TRIGGER IF EXISTS {name};" for name in names]
