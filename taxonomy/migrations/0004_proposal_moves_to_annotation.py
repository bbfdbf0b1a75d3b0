"""Proposal moves to the annotation app (its migration 0008 takes it over, same table): the
taxonomy app forgets it, and nothing happens to the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("taxonomy", "0003_proposal_answered_at"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Proposal")],
            database_operations=[],
        ),
    ]
