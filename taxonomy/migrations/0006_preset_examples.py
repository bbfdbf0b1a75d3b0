"""Fill the guideline's example of existing studies' types from the presets (issue 23: the
presets now give one example per type, TAXONOMY.md). Only a type of a taxonomy made from a
preset (same slug), whose code is the preset type's and whose example is empty: an example
someone wrote is kept, and nothing else of a type (code, name, definition, key) changes, so no
label moves. The texts are copied here, as the preset files had them when this was written.
Reversed, it empties exactly the examples it filled (those still equal to its text)."""

from django.db import migrations

EXAMPLES = {
    "interaction-smells": {
        "ambiguous_instruction": (
            'In a Go networking conversation the user asks for "a streaming API client": HTTP chunked streaming, Server-Sent Events, WebSocket and a queue consumer all fit.'
        ),
        "incomplete_instruction": (
            '"create table Asst_referee_mast" with no columns or types; the model invents `country_name` as text, and the next turn\'s data shows a numeric country id.'
        ),
        "must_do_omission": (
            'Turn 1 lays out a modelling pipeline whose data-cleaning step is explicit; asked for "the Python code for that", the model\'s code has no handling of missing values or outliers.'
        ),
        "must_not_violation": (
            "Turn 1 forbids language tags on code fences and any action beyond acknowledging pasted code; in turn 2 the model tags its fence `python` and rewrites the pasted PyQt5 code."
        ),
        "signature_mismatch": (
            "An `EventBus` class built over two turns exposes `subscribe(handler)`; the `EventSystem` written in turn 3 calls `bus.subscribe(event_type, handler)`."
        ),
        "cross_turn_inconsistency": (
            "The model first explains the two private helper methods of the user's class correctly, then later claims the class has no such helpers."
        ),
        "partial_functionality_breakdown": (
            "Asked to add CSV export to a working report script, the model rewrites the loader and the totals that were right before now double-count refunds."
        ),
        "code_rollback": (
            "A null check fixed in turn 3 is gone again in turn 5's full listing, with the crash it fixed."
        ),
        "repetitive_response": (
            "The user says the function still fails on empty input; the reply repeats the previous listing unchanged with a new explanation."
        ),
    },
    "agent-misalignment": {
        "misread_project": (
            "The agent blames a missing dependency for a failing test and edits requirements.txt, while the log shows the test fails on an assertion in the code under test."
        ),
        "misread_developer_intent": (
            "Asked to make the search case-insensitive, the agent adds a new case-sensitivity setting that defaults to sensitive."
        ),
        "developer_constraint_violation": (
            'The developer says "do not touch the public API"; the agent renames an exported function to fix a typo in it.'
        ),
        "scope_overreach": (
            "Asked to fix one failing test, the agent also reformats the module and upgrades two dependencies."
        ),
        "faulty_implementation": (
            "The pagination the agent writes skips the last page whenever the item count is an exact multiple of the page size."
        ),
        "operational_execution_error": (
            'The agent runs `pytest` from the wrong folder, reads "no tests ran" as a pass, and goes on.'
        ),
        "inaccurate_self_reporting": (
            'The agent writes "all tests pass" after a run whose output it shows ends with 3 failures.'
        ),
        "instruction_following_failure": (
            "The developer stated the Python version (3.8) in the first message; the agent still uses `match` statements, which need 3.10."
        ),
        "underspecified_instruction": (
            '"Clean up the logs" could mean deleting old log files or removing noisy log calls; the agent picks one, the developer meant the other.'
        ),
        "other_indeterminate": (
            "The agent deletes a configuration file, and nothing in the log says why."
        ),
        "effort_or_trust_cost": (
            "The agent proposes a wrong fix, the developer rejects it before it is applied, and the next proposal works: time lost, nothing changed."
        ),
        "code_or_task_damage": (
            "The agent's edit leaves the module with a syntax error that must be repaired before the task can continue."
        ),
        "project_state_damage": (
            "The agent runs `git reset --hard` and the developer's uncommitted changes are lost."
        ),
        "external_state_damage": (
            "The agent runs a migration against the shared staging database instead of the local one."
        ),
        "developer_pushback": (
            'The developer replies "no, keep the old signature" and the agent reverts its change to the signature.'
        ),
        "self_corrected": (
            "The agent runs the tests, sees its own change broke one, and fixes it before reporting."
        ),
        "unknown": (
            "The session ends right after the faulty change, with no later turn showing whether anyone fixed it."
        ),
    },
}


def fill(apps, schema_editor):
    Type = apps.get_model("taxonomy", "Type")
    for slug, examples in EXAMPLES.items():
        for code, text in examples.items():
            Type.objects.filter(axis__version__taxonomy__slug=slug, code=code, example="").update(
                example=text
            )


def empty(apps, schema_editor):
    Type = apps.get_model("taxonomy", "Type")
    for slug, examples in EXAMPLES.items():
        for code, text in examples.items():
            Type.objects.filter(axis__version__taxonomy__slug=slug, code=code, example=text).update(
                example=""
            )


class Migration(migrations.Migration):
    dependencies = [
        ("taxonomy", "0005_version_retired_keys"),
    ]

    operations = [migrations.RunPython(fill, empty)]
