"""Demo conversations for `manage.py demo`: realistic multi-turn human-LLM coding chats,
written as templates and filled in deterministically, so every run (and every machine) gets
the same 36 conversations. Each template follows one storyline in one programming language
and is instantiated three times with different names; follow-ups exhibit the nine smells of
the interaction-smells preset, and many turns are clean.

The smells each turn was written to show are kept here (`DemoTurn.smells`), not in the
imported records: the card page shows conversation metadata, and an answer key there would
unblind the annotators."""

# The chats' long lines are part of the data (annotators meet them in real logs).
# ruff: noqa: E501

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

AMBIGUOUS = "ambiguous_instruction"
INCOMPLETE = "incomplete_instruction"
MUST_DO = "must_do_omission"
MUST_NOT = "must_not_violation"
SIGNATURE = "signature_mismatch"
INCONSISTENCY = "cross_turn_inconsistency"
BREAKDOWN = "partial_functionality_breakdown"
ROLLBACK = "code_rollback"
REPETITIVE = "repetitive_response"

FENCE = "```"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class DemoTurn:
    user: str
    reply: str
    smells: tuple[str, ...] = ()


@dataclass
class DemoConversation:
    external_id: str
    title: str
    language: str
    turns: list[DemoTurn] = field(default_factory=list)

    def as_record(self) -> dict:
        """The native JSONL record (DESIGN.md): id, messages, metadata."""
        messages = []
        for turn in self.turns:
            messages.append({"role": "user", "content": turn.user})
            messages.append({"role": "assistant", "content": turn.reply})
        return {
            "id": self.external_id,
            "messages": messages,
            "metadata": {"title": self.title, "language": self.language, "source": "demo"},
        }


def _fill(text: str, v: dict[str, str]) -> str:
    # `{{name}}` rather than str.format: the code in these templates is full of braces.
    # An unknown name raises KeyError, so a typo cannot slip into the demo unnoticed.
    text = textwrap.dedent(text).strip("\n")
    return _PLACEHOLDER.sub(lambda m: v[m.group(1)], text).replace("~~~", FENCE)


def _turn(v: dict[str, str], user: str, reply: str, *smells: str) -> DemoTurn:
    return DemoTurn(_fill(user, v), _fill(reply, v), tuple(smells))


# Each template takes the variant's names and its position (0, 1, 2); the position decides a
# few optional follow-up turns so that conversations run from 2 to 5 turns.
Template = Callable[[dict[str, str], int], list[DemoTurn]]


def _python_no_pandas(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write a Python function that reads `{{file}}` and returns the total `{{amount}}` per `{{key}}` as a dict. Don't use pandas: this runs on a locked-down server where only the standard library is installed.
            """,
            """
            Here's a standard-library version using `csv.DictReader`:

            ~~~python
            import csv
            from collections import defaultdict


            def totals_by_{{key}}(path: str) -> dict[str, float]:
                totals: dict[str, float] = defaultdict(float)
                with open(path, newline="", encoding="utf-8") as f:
                    for row in csv.DictReader(f):
                        totals[row["{{key}}"]] += float(row["{{amount}}"])
                return dict(totals)
            ~~~

            `defaultdict(float)` starts every new {{key}} at 0.0, so you don't need a membership check before adding.
            """,
        ),
        _turn(
            v,
            """
            Great. Now sort the result by total, highest first, and print the top 5 as a small table.
            """,
            """
            Sure! The cleanest way to group, sort and format is with pandas:

            ~~~python
            import pandas as pd


            def top_{{key}}s(path: str, n: int = 5) -> pd.DataFrame:
                df = pd.read_csv(path)
                totals = df.groupby("{{key}}")["{{amount}}"].sum().sort_values(ascending=False)
                return totals.head(n).reset_index()


            if __name__ == "__main__":
                print(top_{{key}}s("{{file}}").to_string(index=False))
            ~~~

            `groupby(...).sum()` replaces the manual loop and `to_string(index=False)` prints an aligned table without the index column.
            """,
            MUST_NOT,
        ),
        _turn(
            v,
            """
            I said no pandas. This is what happens on the server:

            ~~~
            Traceback (most recent call last):
              File "/opt/reports/top_{{key}}s.py", line 1, in <module>
                import pandas as pd
            ModuleNotFoundError: No module named 'pandas'
            ~~~

            Please stick to the standard library.
            """,
            """
            Sorry about that, you did say no pandas. Here is the same thing on top of `totals_by_{{key}}` from before, standard library only:

            ~~~python
            def print_top_{{key}}s(path: str, n: int = 5) -> None:
                totals = totals_by_{{key}}(path)
                ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)[:n]
                width = max((len(name) for name, _ in ranked), default=len("{{key}}"))
                print(f"{'{{key}}':<{width}}  {'{{amount}}':>12}")
                for name, total in ranked:
                    print(f"{name:<{width}}  {total:>12,.2f}")


            if __name__ == "__main__":
                print_top_{{key}}s("{{file}}")
            ~~~
            """,
        ),
    ]
    if i != 1:
        turns.append(
            _turn(
                v,
                """
                Works. Can the number of rows be a command-line option? Default 5.
                """,
                """
                Use `argparse`, also from the standard library:

                ~~~python
                import argparse

                if __name__ == "__main__":
                    parser = argparse.ArgumentParser(description="Top {{key}}s by {{amount}}")
                    parser.add_argument("path", nargs="?", default="{{file}}")
                    parser.add_argument("-n", "--rows", type=int, default=5, help="rows to print (default: 5)")
                    args = parser.parse_args()
                    print_top_{{key}}s(args.path, args.rows)
                ~~~

                Run it as `python top_{{key}}s.py {{file}} -n 10`.
                """,
            )
        )
    return turns


def _javascript_search(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            The {{thing}} search on our page is too slow, make it faster.
            """,
            """
            I'll assume the input fires a request on every keystroke. Debouncing it so a request only goes out once the user pauses typing usually fixes the "slow" feeling:

            ~~~javascript
            function debounce(fn, ms) {
              let timer;
              return (...args) => {
                clearTimeout(timer);
                timer = setTimeout(() => fn(...args), ms);
              };
            }

            const input = document.querySelector("#{{thing}}-search");
            const list = document.querySelector("#{{thing}}-results");

            async function search(q) {
              const res = await fetch(`{{endpoint}}?q=${encodeURIComponent(q)}`);
              render(list, await res.json());
            }

            input.addEventListener("input", debounce((e) => search(e.target.value), 300));
            ~~~
            """,
            AMBIGUOUS,
        ),
        _turn(
            v,
            """
            Typing is fine actually. The problem is that old responses arrive after newer ones and overwrite the results, so the list shows matches for "ab" while the box says "abc". Cancel the previous request when a new one starts.
            """,
            """
            That's a race between responses. Abort the previous `fetch` with an `AbortController` whenever a new search starts:

            ~~~javascript
            let controller = null;

            async function search(q) {
              controller?.abort();
              controller = new AbortController();
              try {
                const res = await fetch(`{{endpoint}}?q=${encodeURIComponent(q)}`, { signal: controller.signal });
                render(list, await res.json());
              } catch (err) {
                if (err.name !== "AbortError") throw err;
              }
            }

            input.addEventListener("input", debounce((e) => search(e.target.value), 300));
            ~~~

            An aborted request rejects with `AbortError`, which we ignore; only the latest response ever reaches `render`.
            """,
        ),
        _turn(
            v,
            """
            Nice. Can you also show a spinner while a request is running?
            """,
            """
            Sure, toggle a class on the results container around the request:

            ~~~javascript
            const spinner = document.querySelector("#{{thing}}-spinner");

            async function search(q) {
              spinner.hidden = false;
              try {
                const res = await fetch(`{{endpoint}}?q=${encodeURIComponent(q)}`);
                render(list, await res.json());
              } finally {
                spinner.hidden = true;
              }
            }

            input.addEventListener("input", debounce((e) => search(e.target.value), 300));
            ~~~
            """,
            BREAKDOWN,
        ),
    ]
    if i != 0:
        turns.append(
            _turn(
                v,
                """
                After your last change the stale results are back: type fast and the list shows the wrong {{thing}}s again.
                """,
                """
                You're right, the spinner version dropped the `AbortController`. Here are both together; the spinner is only hidden by the request that is still current:

                ~~~javascript
                let controller = null;

                async function search(q) {
                  controller?.abort();
                  const mine = (controller = new AbortController());
                  spinner.hidden = false;
                  try {
                    const res = await fetch(`{{endpoint}}?q=${encodeURIComponent(q)}`, { signal: mine.signal });
                    render(list, await res.json());
                  } catch (err) {
                    if (err.name !== "AbortError") throw err;
                  } finally {
                    if (controller === mine) spinner.hidden = true;
                  }
                }
                ~~~
                """,
            )
        )
    if i == 1:
        turns.append(
            _turn(
                v,
                """
                Last thing: don't search at all until at least 2 characters are typed, and clear the list when the box is emptied.
                """,
                """
                Add a guard at the top of `search`:

                ~~~javascript
                async function search(q) {
                  q = q.trim();
                  if (q.length < 2) {
                    controller?.abort();
                    spinner.hidden = true;
                    render(list, []);
                    return;
                  }
                  // ... the rest as before
                }
                ~~~

                Aborting here also stops a request for "a" from filling the list after the user has cleared the box.
                """,
            )
        )
    return turns


def _sql_top(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write a SQL query to get the top {{entities}}.
            """,
            """
            Assuming "top" means the most {{facts}} of all time, here are the ten {{entities}} with the most {{facts}}:

            ~~~sql
            SELECT c.id, c.name, COUNT(o.id) AS {{fact}}_count
            FROM {{entities}} c
            JOIN {{facts}} o ON o.{{entity}}_id = c.id
            GROUP BY c.id, c.name
            ORDER BY {{fact}}_count DESC
            LIMIT 10;
            ~~~

            Tell me if you meant a different measure (revenue, quantity) or a time window.
            """,
            INCOMPLETE,
        ),
        _turn(
            v,
            """
            By revenue (`{{facts}}.{{measure}}`) over the last 90 days, PostgreSQL 15. The result must include the {{entity}}'s email, marketing needs it for the campaign.
            """,
            """
            ~~~sql
            SELECT c.id, c.name, c.email, SUM(o.{{measure}}) AS revenue
            FROM {{entities}} c
            JOIN {{facts}} o ON o.{{entity}}_id = c.id
            WHERE o.created_at >= now() - interval '90 days'
            GROUP BY c.id, c.name, c.email
            ORDER BY revenue DESC
            LIMIT 10;
            ~~~

            `c.email` is in the `GROUP BY` because it comes from the same row as `c.id`; since `c.id` is the primary key, PostgreSQL would also accept it without.
            """,
        ),
        _turn(
            v,
            """
            {{Entities}} with no {{facts}} in that window should show up too, with revenue 0, so make it the top 50 instead of 10.
            """,
            """
            Use a `LEFT JOIN` and move the date condition into the join, otherwise the `WHERE` clause filters the {{entities}} without {{facts}} out again:

            ~~~sql
            SELECT c.id, c.name, COALESCE(SUM(o.{{measure}}), 0) AS revenue
            FROM {{entities}} c
            LEFT JOIN {{facts}} o
              ON o.{{entity}}_id = c.id AND o.created_at >= now() - interval '90 days'
            GROUP BY c.id, c.name
            ORDER BY revenue DESC
            LIMIT 50;
            ~~~
            """,
            MUST_DO,
        ),
    ]
    if i == 2:
        turns.append(
            _turn(
                v,
                """
                Where did the email go?
                """,
                """
                My mistake, I dropped it. With the email back:

                ~~~sql
                SELECT c.id, c.name, c.email, COALESCE(SUM(o.{{measure}}), 0) AS revenue
                FROM {{entities}} c
                LEFT JOIN {{facts}} o
                  ON o.{{entity}}_id = c.id AND o.created_at >= now() - interval '90 days'
                GROUP BY c.id, c.name, c.email
                ORDER BY revenue DESC
                LIMIT 50;
                ~~~
                """,
            )
        )
    return turns


def _java_signature(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write a Java repository class for {{Entity}} objects kept in memory in a HashMap, with findById and save. {{Entity}} has a `long getId()`.
            """,
            """
            ~~~java
            import java.util.HashMap;
            import java.util.Map;
            import java.util.Optional;

            public class {{Entity}}Repository {
                private final Map<Long, {{Entity}}> store = new HashMap<>();

                public Optional<{{Entity}}> findById(long id) {
                    return Optional.ofNullable(store.get(id));
                }

                public void save({{Entity}} {{entity}}) {
                    store.put({{entity}}.getId(), {{entity}});
                }
            }
            ~~~

            `findById` returns an `Optional` so callers have to decide what a missing {{entity}} means instead of getting a `null`.
            """,
        ),
        _turn(
            v,
            """
            Now a {{Entity}}Service with a method that loads a {{entity}} by id and marks it as {{state}}. It should throw if the {{entity}} doesn't exist.
            """,
            """
            ~~~java
            public class {{Entity}}Service {
                private final {{Entity}}Repository repository;

                public {{Entity}}Service({{Entity}}Repository repository) {
                    this.repository = repository;
                }

                public {{Entity}} mark{{State}}(long id) {
                    {{Entity}} {{entity}} = repository.findById(id, true);
                    if ({{entity}} == null) {
                        throw new IllegalArgumentException("No {{entity}} with id " + id);
                    }
                    {{entity}}.set{{State}}(true);
                    repository.save({{entity}});
                    return {{entity}};
                }
            }
            ~~~

            Passing `true` makes the lookup strict, and the null check covers the missing case.
            """,
            SIGNATURE,
        ),
        _turn(
            v,
            """
            It doesn't compile:

            ~~~
            {{Entity}}Service.java:9: error: method findById in class {{Entity}}Repository cannot be applied to given types;
                    {{Entity}} {{entity}} = repository.findById(id, true);
                                                  ^
              required: long
              found:    long,boolean
              reason: actual and formal argument lists differ in length
            1 error
            ~~~
            """,
            """
            Right, `findById` takes only the id and returns an `Optional<{{Entity}}>`. Use `orElseThrow`:

            ~~~java
            public {{Entity}} mark{{State}}(long id) {
                {{Entity}} {{entity}} = repository.findById(id)
                        .orElseThrow(() -> new IllegalArgumentException("No {{entity}} with id " + id));
                {{entity}}.set{{State}}(true);
                repository.save({{entity}});
                return {{entity}};
            }
            ~~~
            """,
        ),
    ]
    if i == 1:
        turns.append(
            _turn(
                v,
                """
                Could you add a JUnit 5 test for the missing-{{entity}} case?
                """,
                """
                ~~~java
                import static org.junit.jupiter.api.Assertions.assertThrows;

                import org.junit.jupiter.api.Test;

                class {{Entity}}ServiceTest {
                    @Test
                    void mark{{State}}ThrowsForUnknownId() {
                        {{Entity}}Service service = new {{Entity}}Service(new {{Entity}}Repository());
                        assertThrows(IllegalArgumentException.class, () -> service.mark{{State}}(42L));
                    }
                }
                ~~~
                """,
            )
        )
    return turns


def _go_inconsistency(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write a Go HTTP handler that returns all {{things}} from an in-memory store as JSON. Standard library only.
            """,
            """
            ~~~go
            package main

            import (
                "encoding/json"
                "net/http"
                "sync"
            )

            type {{Thing}} struct {
                ID   string `json:"id"`
                Name string `json:"name"`
            }

            type Store struct {
                mu    sync.RWMutex
                items map[string]{{Thing}}
            }

            func (s *Store) All() []{{Thing}} {
                s.mu.RLock()
                defer s.mu.RUnlock()
                out := make([]{{Thing}}, 0, len(s.items))
                for _, it := range s.items {
                    out = append(out, it)
                }
                return out
            }

            func (s *Store) list{{Things}}(w http.ResponseWriter, r *http.Request) {
                w.Header().Set("Content-Type", "application/json")
                json.NewEncoder(w).Encode(s.All())
            }
            ~~~
            """,
        ),
        _turn(
            v,
            """
            Is the RWMutex really needed? Could I use sync.Map instead?
            """,
            """
            Keep the `RWMutex`. `sync.Map` is optimised for two cases: keys that are written once and read many times, and goroutines working on disjoint sets of keys. A store that gets created, updated and listed is neither, and a plain map behind an `RWMutex` is simpler, type-safe (no `interface{}` casts) and usually faster. Reach for `sync.Map` only after a profile shows lock contention.
            """,
        ),
        _turn(
            v,
            """
            OK. Add a POST handler that creates a {{thing}} from a JSON body.
            """,
            """
            For handlers that write, always use `sync.Map` instead of a mutex: a mutex around a map is a common source of contention in HTTP servers, and `sync.Map` is the recommended type for concurrent writes.

            ~~~go
            type Store struct {
                items sync.Map // id -> {{Thing}}
            }

            func (s *Store) create{{Thing}}(w http.ResponseWriter, r *http.Request) {
                var it {{Thing}}
                if err := json.NewDecoder(r.Body).Decode(&it); err != nil {
                    http.Error(w, err.Error(), http.StatusBadRequest)
                    return
                }
                s.items.Store(it.ID, it)
                w.WriteHeader(http.StatusCreated)
                json.NewEncoder(w).Encode(it)
            }
            ~~~
            """,
            INCONSISTENCY,
        ),
    ]
    if i == 2:
        turns.append(
            _turn(
                v,
                """
                Two answers ago you told me to keep the RWMutex. Which is it?
                """,
                """
                The earlier answer holds: for this store keep the `RWMutex`; nothing about a POST handler changes that. The handler with the mutex version:

                ~~~go
                func (s *Store) create{{Thing}}(w http.ResponseWriter, r *http.Request) {
                    var it {{Thing}}
                    if err := json.NewDecoder(r.Body).Decode(&it); err != nil {
                        http.Error(w, err.Error(), http.StatusBadRequest)
                        return
                    }
                    s.mu.Lock()
                    s.items[it.ID] = it
                    s.mu.Unlock()
                    w.WriteHeader(http.StatusCreated)
                    json.NewEncoder(w).Encode(it)
                }
                ~~~
                """,
            )
        )
    return turns


def _rust_rollback(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write a Rust function that parses a config made of `key=value` lines, like `{{sfield}}={{sexample}}` and `{{nfield}}={{nexample}}`, into a {{Struct}} struct. No crates.
            """,
            """
            ~~~rust
            #[derive(Debug)]
            pub struct {{Struct}} {
                pub {{sfield}}: String,
                pub {{nfield}}: u32,
            }

            pub fn parse_config(text: &str) -> {{Struct}} {
                let mut {{sfield}} = None;
                let mut {{nfield}} = None;
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let (key, value) = line.split_once('=').unwrap();
                    match key.trim() {
                        "{{sfield}}" => {{sfield}} = Some(value.trim().to_string()),
                        "{{nfield}}" => {{nfield}} = Some(value.trim().parse().unwrap()),
                        _ => {}
                    }
                }
                {{Struct}} { {{sfield}}: {{sfield}}.unwrap(), {{nfield}}: {{nfield}}.unwrap() }
            }
            ~~~
            """,
        ),
        _turn(
            v,
            """
            This panics on a bad line (`thread 'main' panicked at src/config.rs:11:56: called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }`). Return a Result with a proper error instead of panicking.
            """,
            """
            ~~~rust
            #[derive(Debug, PartialEq)]
            pub enum ConfigError {
                MissingEquals(usize),
                BadNumber(usize, String),
                Missing(&'static str),
            }

            pub fn parse_config(text: &str) -> Result<{{Struct}}, ConfigError> {
                let mut {{sfield}} = None;
                let mut {{nfield}} = None;
                for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                    let (key, value) = line.split_once('=').ok_or(ConfigError::MissingEquals(n + 1))?;
                    match key.trim() {
                        "{{sfield}}" => {{sfield}} = Some(value.trim().to_string()),
                        "{{nfield}}" => {
                            let v = value.trim();
                            {{nfield}} = Some(v.parse().map_err(|_| ConfigError::BadNumber(n + 1, v.to_string()))?);
                        }
                        _ => {}
                    }
                }
                Ok({{Struct}} {
                    {{sfield}}: {{sfield}}.ok_or(ConfigError::Missing("{{sfield}}"))?,
                    {{nfield}}: {{nfield}}.ok_or(ConfigError::Missing("{{nfield}}"))?,
                })
            }
            ~~~

            Line numbers are 1-based so the error points at the line a person sees in an editor.
            """,
        ),
        _turn(
            v,
            """
            Good. Add an optional `timeout_secs` field that defaults to 30.
            """,
            """
            ~~~rust
            #[derive(Debug)]
            pub struct {{Struct}} {
                pub {{sfield}}: String,
                pub {{nfield}}: u32,
                pub timeout_secs: u64,
            }

            pub fn parse_config(text: &str) -> {{Struct}} {
                let mut {{sfield}} = None;
                let mut {{nfield}} = None;
                let mut timeout_secs = 30;
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let (key, value) = line.split_once('=').unwrap();
                    match key.trim() {
                        "{{sfield}}" => {{sfield}} = Some(value.trim().to_string()),
                        "{{nfield}}" => {{nfield}} = Some(value.trim().parse().unwrap()),
                        "timeout_secs" => timeout_secs = value.trim().parse().unwrap(),
                        _ => {}
                    }
                }
                {{Struct}} { {{sfield}}: {{sfield}}.unwrap(), {{nfield}}: {{nfield}}.unwrap(), timeout_secs }
            }
            ~~~
            """,
            ROLLBACK,
        ),
    ]
    if i != 2:
        turns.append(
            _turn(
                v,
                """
                Now it panics on bad input again, you brought the unwraps back.
                """,
                """
                Sorry, I started from the first version. Here is the `Result` version with the new field:

                ~~~rust
                "timeout_secs" => {
                    let v = value.trim();
                    timeout_secs = v.parse().map_err(|_| ConfigError::BadNumber(n + 1, v.to_string()))?;
                }
                ~~~

                Put that arm into the `match` of the `Result`-returning `parse_config`, add `let mut timeout_secs = 30;` before the loop, and `timeout_secs,` to the `Ok({{Struct}} { .. })`.
                """,
            )
        )
    return turns


def _csharp_repetitive(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            In C#, group a `List<{{Type}}>` by month of `{{Date}}` (a `DateTime?`) and sum `{{Amount}}` with LINQ.
            """,
            """
            ~~~csharp
            var perMonth = {{items}}
                .GroupBy(x => new { x.{{Date}}.Value.Year, x.{{Date}}.Value.Month })
                .Select(g => new
                {
                    g.Key.Year,
                    g.Key.Month,
                    Total = g.Sum(x => x.{{Amount}})
                })
                .ToList();
            ~~~

            Grouping on an anonymous type of year and month keeps December 2023 and December 2024 apart.
            """,
        ),
        _turn(
            v,
            """
            It throws `System.InvalidOperationException: Nullable object must have a value.` Some {{items}} have no {{Date}} yet; skip those.
            """,
            """
            Group on the year and month of the date:

            ~~~csharp
            var perMonth = {{items}}
                .GroupBy(x => new { x.{{Date}}.Value.Year, x.{{Date}}.Value.Month })
                .Select(g => new
                {
                    g.Key.Year,
                    g.Key.Month,
                    Total = g.Sum(x => x.{{Amount}})
                })
                .ToList();
            ~~~

            Grouping on an anonymous type of year and month keeps December 2023 and December 2024 apart.
            """,
            REPETITIVE,
        ),
        _turn(
            v,
            """
            That's the same code as before and it still throws.
            """,
            """
            You're right, I repeated it. Filter the {{items}} without a date out before grouping:

            ~~~csharp
            var perMonth = {{items}}
                .Where(x => x.{{Date}}.HasValue)
                .GroupBy(x => new { x.{{Date}}!.Value.Year, x.{{Date}}!.Value.Month })
                .Select(g => new { g.Key.Year, g.Key.Month, Total = g.Sum(x => x.{{Amount}}) })
                .ToList();
            ~~~
            """,
        ),
    ]
    if i == 2:
        turns.append(
            _turn(
                v,
                """
                Works. Order it by month, oldest first.
                """,
                """
                Add an ordering after the projection:

                ~~~csharp
                    .OrderBy(m => m.Year).ThenBy(m => m.Month)
                    .ToList();
                ~~~
                """,
            )
        )
    return turns


def _bash_must_do(v: dict[str, str], i: int) -> list[DemoTurn]:
    return [
        _turn(
            v,
            """
            Write a bash script that tars {{src}} and uploads it to s3://{{bucket}}/ with the date in the file name.
            """,
            """
            ~~~bash
            #!/usr/bin/env bash
            archive="/tmp/{{name}}-$(date +%F).tar.gz"
            tar -czf "$archive" -C "$(dirname {{src}})" "$(basename {{src}})"
            aws s3 cp "$archive" "s3://{{bucket}}/"
            rm -f "$archive"
            ~~~
            """,
        ),
        _turn(
            v,
            """
            It must log every run to /var/log/{{name}}-backup.log, and it must exit non-zero if anything fails: cron only alerts us on the exit code.
            """,
            """
            ~~~bash
            #!/usr/bin/env bash
            set -euo pipefail

            log=/var/log/{{name}}-backup.log
            exec >>"$log" 2>&1
            echo "$(date -Is) start backup of {{src}}"
            trap 'echo "$(date -Is) FAILED (exit $?) at line $LINENO"' ERR

            archive="/tmp/{{name}}-$(date +%F).tar.gz"
            tar -czf "$archive" -C "$(dirname {{src}})" "$(basename {{src}})"
            aws s3 cp --only-show-errors "$archive" "s3://{{bucket}}/"
            rm -f "$archive"
            echo "$(date -Is) done: s3://{{bucket}}/$(basename "$archive") ($(du -h "$archive" 2>/dev/null | cut -f1 || echo 'size unknown'), host $(hostname -f), user $(id -un))"
            ~~~

            `set -euo pipefail` makes any failing command end the script with its exit code, and the `ERR` trap writes the failure to the log before that happens.
            """,
        ),
        _turn(
            v,
            """
            Add retention: delete archives older than {{days}} days from the bucket.
            """,
            """
            ~~~bash
            #!/usr/bin/env bash
            archive="/tmp/{{name}}-$(date +%F).tar.gz"
            tar -czf "$archive" -C "$(dirname {{src}})" "$(basename {{src}})"
            aws s3 cp "$archive" "s3://{{bucket}}/"
            rm -f "$archive"

            cutoff=$(date -d "-{{days}} days" +%F)
            aws s3 ls "s3://{{bucket}}/" | awk '{print $4}' | while read -r key; do
              day=${key#{{name}}-}; day=${day%.tar.gz}
              if [[ "$day" < "$cutoff" ]]; then
                aws s3 rm "s3://{{bucket}}/$key"
              fi
            done
            ~~~

            File names sort by date because of the ISO format, so a string comparison against the cutoff is enough.
            """,
            MUST_DO,
        ),
    ]


def _python_signature(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write `normalize_{{what}}(value, strict=False)` in Python. It should {{rule}}. In strict mode it raises ValueError for anything invalid; otherwise it returns the cleaned string as best it can. Make `strict` keyword-only so nobody passes a bare True by accident.
            """,
            """
            ~~~python
            import re

            _VALID = re.compile(r"{{regex}}")


            def normalize_{{what}}(value: str, *, strict: bool = False) -> str:
                cleaned = {{clean}}
                if strict and not _VALID.fullmatch(cleaned):
                    raise ValueError(f"invalid {{what}}: {value!r}")
                return cleaned
            ~~~

            The `*` in the signature makes `strict` keyword-only: `normalize_{{what}}(x, True)` is a `TypeError`, `normalize_{{what}}(x, strict=True)` works.
            """,
        ),
        _turn(
            v,
            """
            Now use it to clean the `{{what}}` column of a list of dict rows, in strict mode, and collect the rows that fail with the error message.
            """,
            """
            ~~~python
            def clean_rows(rows: list[dict]) -> tuple[list[dict], list[tuple[dict, str]]]:
                good, bad = [], []
                for row in rows:
                    try:
                        good.append({**row, "{{what}}": normalize_{{what}}(row["{{what}}"], True)})
                    except ValueError as exc:
                        bad.append((row, str(exc)))
                return good, bad
            ~~~

            Rows that fail keep their original value in `bad` so you can show them to whoever entered the data.
            """,
            SIGNATURE,
        ),
    ]
    if i == 0:
        turns.append(
            _turn(
                v,
                """
                `TypeError: normalize_{{what}}() takes 1 positional argument but 2 were given`
                """,
                """
                My bad: `strict` is keyword-only, as you asked. The call must be `normalize_{{what}}(row["{{what}}"], strict=True)`. Everything else in `clean_rows` stays the same.
                """,
            )
        )
    return turns


def _typescript_ambiguous(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write a React hook in TypeScript, `{{hook}}<T>(url: string)`, that returns `{ data, error, loading }` and ignores responses for a url that is no longer current.
            """,
            """
            ~~~typescript
            import { useEffect, useState } from "react";

            export function {{hook}}<T>(url: string) {
              const [data, setData] = useState<T | null>(null);
              const [error, setError] = useState<Error | null>(null);
              const [loading, setLoading] = useState(true);

              useEffect(() => {
                let current = true;
                setLoading(true);
                fetch(url)
                  .then((res) => {
                    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
                    return res.json() as Promise<T>;
                  })
                  .then((json) => current && (setData(json), setError(null)))
                  .catch((err) => current && setError(err))
                  .finally(() => current && setLoading(false));
                return () => {
                  current = false;
                };
              }, [url]);

              return { data, error, loading };
            }
            ~~~
            """,
        ),
        _turn(
            v,
            """
            Make it cache.
            """,
            """
            I'll add a module-level cache so components asking for the same url share one result for the lifetime of the page:

            ~~~typescript
            const cache = new Map<string, unknown>();

            // inside the effect, before fetching:
            if (cache.has(url)) {
              setData(cache.get(url) as T);
              setLoading(false);
              return;
            }
            // ...and after a successful response:
            cache.set(url, json);
            ~~~
            """,
            AMBIGUOUS,
        ),
        _turn(
            v,
            """
            I meant across page reloads: keep results for {{ttl}} minutes, the {{what}} barely changes.
            """,
            """
            Then it has to live in `localStorage` with a timestamp:

            ~~~typescript
            const TTL_MS = {{ttl}} * 60 * 1000;

            function readCache<T>(url: string): T | undefined {
              const raw = localStorage.getItem(`{{hook}}:${url}`);
              if (!raw) return undefined;
              const { at, value } = JSON.parse(raw) as { at: number; value: T };
              return Date.now() - at < TTL_MS ? value : undefined;
            }

            function writeCache<T>(url: string, value: T): void {
              localStorage.setItem(`{{hook}}:${url}`, JSON.stringify({ at: Date.now(), value }));
            }
            ~~~

            Call `readCache` where the in-memory lookup was and `writeCache` after a successful response. Expired entries are simply refetched and overwritten.
            """,
        ),
    ]
    return turns if i != 1 else turns[:2]


def _regex_repetitive(v: dict[str, str], i: int) -> list[DemoTurn]:
    return [
        _turn(
            v,
            """
            Give me a regex to validate {{subject}}.
            """,
            """
            A common general-purpose pattern:

            ~~~regex
            {{generic}}
            ~~~

            {{generic_note}}
            """,
            INCOMPLETE,
        ),
        _turn(
            v,
            """
            {{clarify}}
            """,
            """
            ~~~regex
            {{specific}}
            ~~~

            {{specific_note}}
            """,
        ),
        _turn(
            v,
            """
            {{extend}}
            """,
            """
            ~~~regex
            {{specific}}
            ~~~

            {{specific_note}}
            """,
            REPETITIVE,
        ),
    ]


def _express_clean(v: dict[str, str], i: int) -> list[DemoTurn]:
    turns = [
        _turn(
            v,
            """
            Write an Express middleware that logs method, path and duration in ms of every request.
            """,
            """
            ~~~javascript
            function requestLog(req, res, next) {
              const start = process.hrtime.bigint();
              res.on("finish", () => {
                const ms = Number(process.hrtime.bigint() - start) / 1e6;
                console.log(`${req.method} ${req.originalUrl} ${ms.toFixed(1)}ms`);
              });
              next();
            }

            app.use(requestLog);
            ~~~

            Listening for `finish` measures until the response is fully sent, not just until the handler returns.
            """,
        ),
        _turn(
            v,
            """
            Also log the status code, and skip `{{skip}}` ({{why}}).
            """,
            """
            ~~~javascript
            function requestLog(req, res, next) {
              if (req.path === "{{skip}}") return next();
              const start = process.hrtime.bigint();
              res.on("finish", () => {
                const ms = Number(process.hrtime.bigint() - start) / 1e6;
                console.log(`${req.method} ${req.originalUrl} ${res.statusCode} ${ms.toFixed(1)}ms`);
              });
              next();
            }
            ~~~

            `req.path` ignores the query string, so `{{skip}}?verbose=1` is skipped too.
            """,
        ),
    ]
    if i == 1:
        turns.append(
            _turn(
                v,
                """
                Can you write a Jest test with supertest that checks `{{skip}}` is not logged?
                """,
                """
                ~~~javascript
                const express = require("express");
                const request = require("supertest");
                const { requestLog } = require("./requestLog");

                test("{{skip}} is not logged", async () => {
                  const app = express();
                  app.use(requestLog);
                  app.get("{{skip}}", (req, res) => res.send("ok"));
                  const log = jest.spyOn(console, "log").mockImplementation(() => {});
                  await request(app).get("{{skip}}").expect(200);
                  expect(log).not.toHaveBeenCalled();
                  log.mockRestore();
                });
                ~~~
                """,
            )
        )
    return turns


# (slug, language, template, three variants). The variant names are the only thing that
# changes between a template's three conversations.
TEMPLATES: list[tuple[str, str, Template, list[dict[str, str]]]] = [
    (
        "csv-totals",
        "Python",
        _python_no_pandas,
        [
            {"file": "sales_2023.csv", "key": "region", "amount": "revenue"},
            {"file": "timesheet.csv", "key": "employee", "amount": "hours"},
            {"file": "transactions.csv", "key": "merchant", "amount": "amount"},
        ],
    ),
    (
        "search-box",
        "JavaScript",
        _javascript_search,
        [
            {"thing": "product", "endpoint": "/api/products"},
            {"thing": "customer", "endpoint": "/api/customers"},
            {"thing": "ticket", "endpoint": "/api/tickets"},
        ],
    ),
    (
        "top-query",
        "SQL",
        _sql_top,
        [
            {
                "entities": "customers",
                "Entities": "Customers",
                "entity": "customer",
                "facts": "orders",
                "fact": "order",
                "measure": "total_amount",
            },
            {
                "entities": "sellers",
                "Entities": "Sellers",
                "entity": "seller",
                "facts": "sales",
                "fact": "sale",
                "measure": "amount",
            },
            {
                "entities": "accounts",
                "Entities": "Accounts",
                "entity": "account",
                "facts": "invoices",
                "fact": "invoice",
                "measure": "amount_paid",
            },
        ],
    ),
    (
        "repository",
        "Java",
        _java_signature,
        [
            {"Entity": "Invoice", "entity": "invoice", "state": "paid", "State": "Paid"},
            {
                "Entity": "Shipment",
                "entity": "shipment",
                "state": "delivered",
                "State": "Delivered",
            },
            {"Entity": "Account", "entity": "account", "state": "locked", "State": "Locked"},
        ],
    ),
    (
        "http-store",
        "Go",
        _go_inconsistency,
        [
            {
                "things": "bookmarks",
                "Things": "Bookmarks",
                "thing": "bookmark",
                "Thing": "Bookmark",
            },
            {
                "things": "feature flags",
                "Things": "Flags",
                "thing": "feature flag",
                "Thing": "Flag",
            },
            {"things": "notes", "Things": "Notes", "thing": "note", "Thing": "Note"},
        ],
    ),
    (
        "config-parser",
        "Rust",
        _rust_rollback,
        [
            {
                "Struct": "ServerConfig",
                "sfield": "host",
                "sexample": "0.0.0.0",
                "nfield": "port",
                "nexample": "8080",
            },
            {
                "Struct": "DbConfig",
                "sfield": "url",
                "sexample": "postgres://app@db/app",
                "nfield": "pool_size",
                "nexample": "16",
            },
            {
                "Struct": "CacheConfig",
                "sfield": "path",
                "sexample": "/var/cache/app",
                "nfield": "max_entries",
                "nexample": "10000",
            },
        ],
    ),
    (
        "linq-by-month",
        "C#",
        _csharp_repetitive,
        [
            {"Type": "Order", "items": "orders", "Date": "ShippedAt", "Amount": "Total"},
            {"Type": "Payment", "items": "payments", "Date": "SettledAt", "Amount": "Amount"},
            {"Type": "Ticket", "items": "tickets", "Date": "ClosedAt", "Amount": "HoursSpent"},
        ],
    ),
    (
        "backup-script",
        "Bash",
        _bash_must_do,
        [
            {"src": "/var/www", "bucket": "acme-backups/www", "name": "www", "days": "14"},
            {"src": "/srv/pgdumps", "bucket": "acme-backups/db", "name": "pgdumps", "days": "30"},
            {
                "src": "/home/git/repositories",
                "bucket": "acme-backups/git",
                "name": "git",
                "days": "7",
            },
        ],
    ),
    (
        "normalize",
        "Python",
        _python_signature,
        [
            {
                "what": "email",
                "rule": "trim whitespace and lower-case it",
                "regex": r"[^@\s]+@[^@\s]+\.[a-z]{2,}",
                "clean": "value.strip().lower()",
            },
            {
                "what": "sku",
                "rule": "upper-case it and turn spaces and underscores into dashes",
                "regex": r"[A-Z0-9]+(-[A-Z0-9]+)*",
                "clean": 're.sub(r"[\\s_]+", "-", value.strip()).upper()',
            },
            {
                "what": "iban",
                "rule": "remove spaces and upper-case it",
                "regex": r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}",
                "clean": 'value.replace(" ", "").upper()',
            },
        ],
    ),
    (
        "fetch-hook",
        "TypeScript",
        _typescript_ambiguous,
        [
            {"hook": "useFetch", "ttl": "5", "what": "product catalogue"},
            {"hook": "useResource", "ttl": "10", "what": "list of countries"},
            {"hook": "useApi", "ttl": "15", "what": "team directory"},
        ],
    ),
    (
        "validation-regex",
        "Regex",
        _regex_repetitive,
        [
            {
                "subject": "phone numbers",
                "generic": r"^\+?[1-9]\d{1,14}$",
                "generic_note": "This is the E.164 shape: an optional +, then up to 15 digits, no leading zero.",
                "clarify": "German numbers, written either with +49 or a leading 0, e.g. `+49 30 1234567` or `030 1234567`.",
                "specific": r"^(?:\+49|0)[1-9]\d{1,4} ?\d{3,9}$",
                "specific_note": "`(?:\\+49|0)` takes either prefix, the area code has no leading zero after it, and one optional space separates area code and number.",
                "extend": "It should also accept a slash after the area code, like `030/1234567`, which is how half our customers type it into the form on the contact page, and it currently rejects those.",
            },
            {
                "subject": "dates",
                "generic": r"^\d{4}-\d{2}-\d{2}$",
                "generic_note": "This accepts ISO 8601 dates like 2024-12-31. It checks the shape only, not that the day exists.",
                "clarify": "Day first, with dots, like `31.12.2024`, and single-digit days and months (`1.2.2024`) must work too.",
                "specific": r"^(0?[1-9]|[12]\d|3[01])\.(0?[1-9]|1[0-2])\.\d{4}$",
                "specific_note": "Day 1-31 and month 1-12, each with an optional leading zero, separated by dots.",
                "extend": "Also with slashes instead of dots, like `31/12/2024`. Both separators must be accepted.",
            },
            {
                "subject": "postcodes",
                "generic": r"^\d{5}(-\d{4})?$",
                "generic_note": "This is a US ZIP code with the optional ZIP+4 suffix.",
                "clarify": "UK postcodes, like `SW1A 1AA` or `M1 1AE`.",
                "specific": r"^[A-Z]{1,2}\d[A-Z\d]? \d[A-Z]{2}$",
                "specific_note": "Outward code (one or two letters, a digit, an optional letter or digit), a space, then the inward code (a digit and two letters).",
                "extend": "Users type them in lower case and without the space too (`sw1a1aa`). Accept those.",
            },
        ],
    ),
    (
        "request-log",
        "JavaScript",
        _express_clean,
        [
            {"skip": "/healthz", "why": "the load balancer hits it every 2 seconds"},
            {"skip": "/metrics", "why": "Prometheus scrapes it and it floods the log"},
            {"skip": "/favicon.ico", "why": "browsers request it constantly"},
        ],
    ),
]


def demo_conversations() -> list[DemoConversation]:
    """The 36 demo conversations in a fixed order: template by template, variants a-c."""
    conversations = []
    for number, (slug, language, template, variants) in enumerate(TEMPLATES, start=1):
        for i, variant in enumerate(variants):
            conversations.append(
                DemoConversation(
                    external_id=f"demo-{number:02d}{'abc'[i]}-{slug}",
                    title=f"{slug.replace('-', ' ')} ({language}, {'abc'[i]})",
                    language=language,
                    turns=template(variant, i),
                )
            )
    return conversations


def native_records() -> list[dict]:
    return [c.as_record() for c in demo_conversations()]
