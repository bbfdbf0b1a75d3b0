"""Conversation.key is unique in the study (filled by 0018)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_conversation_key"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="conversation",
            constraint=models.UniqueConstraint(fields=("study", "key"), name="conv_study_key"),
        ),
    ]
