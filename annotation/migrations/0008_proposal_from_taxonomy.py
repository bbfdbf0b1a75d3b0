"""Proposal moves from the taxonomy app to this one (issue 8: taxonomy/ imports nothing from
annotation/). The table keeps its name and its rows: only Django's idea of which app owns
the model changes, and the content type (with its permissions) follows it."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def move_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="annotation", model="proposal").exists():
        ContentType.objects.filter(app_label="taxonomy", model="proposal").update(
            app_label="annotation"
        )


def move_content_type_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="taxonomy", model="proposal").exists():
        ContentType.objects.filter(app_label="annotation", model="proposal").update(
            app_label="taxonomy"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_drop_covered_indexes"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("taxonomy", "0004_proposal_moves_to_annotation"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Proposal",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        ("definition", models.TextField()),
                        ("reason", models.TextField(help_text="why none of the existing types fits")),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("accepted", "Accepted"),
                                    ("mapped", "Mapped"),
                                    ("rejected", "Rejected"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("decided_at", models.DateTimeField(blank=True, null=True)),
                        ("decision_reason", models.TextField(blank=True)),
                        ("outcome", models.TextField(blank=True)),
                        ("mapped_to_code", models.CharField(blank=True, max_length=100)),
                        ("answered_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "new_code",
                            models.CharField(
                                blank=True, help_text="the accepted type's code", max_length=100
                            ),
                        ),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "axis",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="taxonomy.axis",
                            ),
                        ),
                        (
                            "created_version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="taxonomy.taxonomyversion",
                            ),
                        ),
                        (
                            "decided_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="decided_proposals",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "new_version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="taxonomy.taxonomyversion",
                            ),
                        ),
                        (
                            "proposer",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="proposals",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "study",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="proposals",
                                to="annotation.study",
                            ),
                        ),
                        (
                            "turn",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="proposals",
                                to="annotation.turn",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "taxonomy_proposal",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(fields=["study", "status"], name="taxonomy_pr_study_i_e22dd1_idx")
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
