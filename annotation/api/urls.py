from __future__ import annotations

from django.urls import include, path

from . import discussion, episode_discussion, episodes, jobs, judges, study
from . import views as api

card = [
    path("", api.card, name="api-card"),
    path("annotation/", api.annotate, name="api-annotate"),
    path("discussion/", discussion.discussion, name="api-discussion"),
    path("consensus/", discussion.decide, name="api-decide"),
    path("proposals/", discussion.propose, name="api-propose"),
]

in_study = [
    path("", study.study, name="api-study"),
    path("taxonomy/", api.taxonomy, name="api-taxonomy"),
    path("conversations/", study.conversations, name="api-conversations"),
    path("conversations/<int:conversation_id>/turns/", study.turns, name="api-turns"),
    path("groups/", study.groups, name="api-groups"),
    path("cards/", api.cards, name="api-cards"),
    path("cards/<int:turn_id>/", include(card)),
    path("annotations/", api.annotations, name="api-annotations"),
    path("annotations/import/", jobs.import_annotations, name="api-annotations-import"),
    path("disputes/", discussion.disputes, name="api-disputes"),
    path("consensus/", discussion.consensus, name="api-consensus"),
    path("proposals/", discussion.proposals, name="api-proposals"),
    path("agreement/", api.agreement, name="api-agreement"),
    path("jobs/", jobs.jobs, name="api-jobs"),
    path("jobs/<int:job_id>/", jobs.job, name="api-job"),
    path("jobs/<int:job_id>/download/", jobs.download, name="api-job-download"),
    path("exports/", jobs.start_export, name="api-exports"),
    path("judge-runs/", judges.judge_runs, name="api-judge-runs"),
    path("episodes/", episodes.episodes, name="api-episodes"),
    path("episodes/<int:episode_id>/", episodes.episode, name="api-episode"),
    path(
        "episodes/<int:episode_id>/judgements/",
        episodes.judgements,
        name="api-episode-judgements",
    ),
    path(
        "episodes/<int:episode_id>/discussion/",
        episode_discussion.discussion,
        name="api-episode-discussion",
    ),
    path(
        "episodes/<int:episode_id>/comments/",
        episode_discussion.comment,
        name="api-episode-comments",
    ),
    path(
        "episodes/<int:episode_id>/decision/",
        episode_discussion.decide,
        name="api-episode-decision",
    ),
]

urlpatterns = [
    path("studies/", api.studies, name="api-studies"),
    path("studies/<slug:slug>/", include(in_study)),
]
