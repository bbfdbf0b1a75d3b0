# Overlapping groups: a conversation may be assigned to several groups, each running its own
# rounds and consensus on it (DESIGN.md, "Group").

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def copy_groups(apps, schema_editor):
    """Each conversation's group becomes its one assignment; each comment belongs to the
    group of its card's conversation (one group per conversation until now)."""
    Conversation = apps.get_model("annotation", "Conversation")
    Assignment = apps.get_model("annotation", "Assignment")
    Comment = apps.get_model("annotation", "Comment")
    rows = Conversation.objects.filter(group__isnull=False).values_list("pk", "group_id")
    Assignment.objects.bulk_create(
        [Assignment(conversation_id=c, group_id=g) for c, g in rows.iterator()], batch_size=2000
    )
    for group_id in rows.values_list("group_id", flat=True).distinct().order_by():
        Comment.objects.filter(turn__conversation__group_id=group_id).update(group_id=group_id)


def uncopy_groups(apps, schema_editor):
    """Back to one group per conversation: the first assignment (by group id) wins."""
    Conversation = apps.get_model("annotation", "Conversation")
    Assignment = apps.get_model("annotation", "Assignment")
    rows = Assignment.objects.order_by("-group_id").values_list("conversation_id", "group_id")
    for conversation_id, group_id in rows.iterator():
        Conversation.objects.filter(pk=conversation_id).update(group_id=group_id)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0004_group_judges"),
        ("taxonomy", "0002_proposal"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Assignment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "conversation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="assignments",
                        to="annotation.conversation",
                    ),
                ),
                (
                    "group",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="assignments",
                        to="annotation.group",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["group", "conversation"], name="annotation__group_i_e57b15_idx"
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("conversation", "group"), name="uniq_assignment"
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="comment",
            name="group",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="comments",
                to="annotation.group",
            ),
        ),
        migrations.RunPython(copy_groups, uncopy_groups),
        migrations.RemoveIndex(
            model_name="conversation",
            name="annotation__study_i_80ef7f_idx",
        ),
        migrations.RemoveField(
            model_name="conversation",
            name="group",
        ),
        migrations.AddField(
            model_name="conversation",
            name="groups",
            field=models.ManyToManyField(
                blank=True,
                related_name="conversations",
                through="annotation.Assignment",
                to="annotation.group",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="consensus",
            name="uniq_current_consensus",
        ),
        migrations.AlterField(
            model_name="cardstate",
            name="turn",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="states",
                to="annotation.turn",
            ),
        ),
        migrations.AlterField(
            model_name="consensus",
            name="method",
            field=models.CharField(
                choices=[
                    ("unanimous", "Unanimous"),
                    ("discussion", "Discussion"),
                    ("moderator", "Moderator"),
                    ("single", "Single"),
                ],
                max_length=12,
            ),
        ),
        migrations.AddConstraint(
            model_name="cardstate",
            constraint=models.UniqueConstraint(fields=("turn", "group"), name="uniq_card_state"),
        ),
        migrations.AddConstraint(
            model_name="consensus",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_current", True)),
                fields=("turn", "group"),
                name="uniq_current_consensus",
            ),
        ),
    ]
