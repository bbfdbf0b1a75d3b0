"""Every page of the app: the home page, then a study's pages under /s/<slug>/, in groups by
who uses them (the REST API has its own urlconf, annotation/api/urls.py)."""

from __future__ import annotations

from django.urls import include, path

from .views import (
    annotate,
    browse,
    coding_filter,
    diff,
    discussion,
    episode_card,
    episode_moderation,
    episode_session,
    evolution,
    gold,
    health,
    jobs,
    judges,
    lead,
    members,
    message_text,
    methods,
    nav,
    opensort,
    opensort_analytics,
    opensort_tags,
    proposals,
    report,
    sample,
    skip,
    split,
    splitcheck,
    studies,
    timing,
)

# /s/<slug>/cards/<turn_id>/...: one card, for its annotators, moderators and leads
card = [
    path("", annotate.card, name="card"),
    path("context/", annotate.card_context, name="card_context"),
    path("text/<int:index>/<str:part>/", message_text.card_text, name="card_text"),
    path("evidence/", annotate.card_evidence, name="card_evidence"),
    path("discussion/", discussion.discussion, name="discussion"),
    path("discussion/context/", discussion.discussion_context, name="discussion_context"),
    path(
        "discussion/text/<int:index>/<str:part>/",
        message_text.discussion_text,
        name="discussion_text",
    ),
    path("comments/", discussion.comment, name="comment"),
    path("decide/", discussion.decide, name="decide"),
    path("timeline/", discussion.card_timeline, name="card_timeline"),
    path("propose/", proposals.propose, name="propose"),
    path("time/", timing.card_time, name="card_time"),
    path("diff/", diff.card_diff, name="card_diff"),
    path("skip/", skip.skip, name="card_skip"),
    path("flag/", skip.flag, name="card_flag"),
]

# /s/<slug>/sessions/...: a session of an episode group, for its annotators (issue 21)
session_pages = [
    path("", episode_session.sessions, name="episode_sessions"),
    path("<int:conversation_id>/", episode_session.session, name="episode_session"),
    path(
        "<int:conversation_id>/text/<int:index>/<str:part>/",
        episode_session.session_text,
        name="episode_session_text",
    ),
    path(
        "<int:conversation_id>/episodes/<int:episode_id>/",
        episode_session.session_episode,
        name="episode_session_episode",
    ),
    path(
        "<int:conversation_id>/quote/", episode_session.session_quote, name="episode_session_quote"
    ),
    path(
        "<int:conversation_id>/new/", episode_session.session_create, name="episode_session_create"
    ),
    path(
        "<int:conversation_id>/coverage/",
        episode_session.session_coverage,
        name="episode_session_coverage",
    ),
]

# /s/<slug>/episodes/<episode_id>/...: one episode, for the annotators of its group (issue 21)
episode = [
    path("", episode_card.episode_card, name="episode_card"),
    path("context/", episode_card.episode_context, name="episode_context"),
    path("decide/", episode_moderation.episode_decide, name="episode_decide"),
    path("comments/", episode_moderation.episode_comment, name="episode_comment"),
    path("skip/", skip.episode_skip, name="episode_skip"),
    path("flag/", skip.episode_flag, name="episode_flag"),
    path("time/", timing.episode_time, name="episode_time"),
]

# /s/<slug>/lead/...: setting the study up, and the study-level gold of overlap cards
lead_pages = [
    path("conversations/", lead.conversations, name="lead_conversations"),
    path("conversations/<int:conversation_id>/", browse.conversation, name="lead_conversation"),
    path(
        "conversations/<int:conversation_id>/text/<int:index>/<str:part>/",
        message_text.conversation_text,
        name="lead_conversation_text",
    ),
    path(
        "conversations/<int:conversation_id>/split/",
        split.split_conversation,
        name="lead_split",
    ),
    path(
        "conversations/<int:conversation_id>/unsplit/",
        split.unsplit_conversation,
        name="lead_unsplit",
    ),
    path("split-proposals/ask/", split.ask_llm, name="lead_split_ask"),
    path("splitting/", split.splitting, name="lead_splitting"),
    path("splitting/start/", split.start_splitting, name="lead_splitting_start"),
    path("splitting/apply/", split.apply_all, name="lead_splitting_apply"),
    path(
        "split-proposals/<int:proposal_id>/dismiss/",
        split.dismiss_proposal,
        name="lead_split_dismiss",
    ),
    path("browse/", browse.browse, name="lead_browse"),
    path("import/", lead.import_conversations, name="lead_import"),
    path("import/annotations/", lead.import_annotations, name="lead_import_annotations"),
    path("filter/", coding_filter.rules_page, name="lead_filter"),
    path("filter/dry-run/", coding_filter.dry_run, name="lead_filter_dry_run"),
    path("filter/apply/", coding_filter.apply, name="lead_filter_apply"),
    path("filter/bring-back/", coding_filter.bring_back, name="lead_filter_bring_back"),
    path("assign/", lead.assign, name="lead_assign"),
    path("groups/", lead.groups, name="lead_groups"),
    path("groups/<int:group_id>/members/", lead.group_members, name="lead_group_members"),
    path("groups/<int:group_id>/moderator/", lead.group_moderator, name="lead_group_moderator"),
    path("phase/", opensort_tags.study_phase, name="lead_study_phase"),
    path("groups/<int:group_id>/phase/", opensort_tags.group_phase, name="lead_group_phase"),
    path("gold/", gold.gold_queue, name="lead_gold"),
    path("gold/<int:turn_id>/", gold.gold_decide, name="lead_gold_decide"),
    path("time/", timing.card_times, name="lead_card_times"),
    path("time/compute/", timing.start_times, name="lead_times_compute"),
    path("flags/", skip.flagged_cards, name="lead_flags"),
    path("split-check/", splitcheck.split_check, name="lead_split_check"),
    path("sample/", sample.sample_page, name="lead_sample"),
    path("sample/methods.txt", sample.methods_download, name="lead_sample_methods"),
    # the open sort's consolidation board: leads and experts (views/opensort.py checks)
    path("board/", opensort.board, name="board"),
    path("board/do/", opensort.board_do, name="board_do"),
    path("board/freeze/", opensort.freeze_page, name="board_freeze"),
    path("board/types/", opensort.provenance, name="provenance"),
    # the consolidation board's analytics, for its leads and experts (issue 11)
    path("board/analytics/", opensort_analytics.board_analytics, name="board_analytics"),
    path(
        "board/analytics/<str:matrix>.csv",
        opensort_analytics.board_analytics_csv,
        name="board_analytics_csv",
    ),
]

# /s/<slug>/jobs/...: the lead's agreement and export jobs
job_pages = [
    path("", jobs.job_list, name="job_list"),
    path("agreement/", jobs.start_agreement, name="job_agreement"),
    path("export/", jobs.start_export, name="job_export"),
    path("<int:job_id>/", jobs.job_detail, name="job_detail"),
    path("<int:job_id>/download/", jobs.job_download, name="job_download"),
]

# /s/<slug>/members/...: invitations, roles and seats, for leads (and moderators: seats of
# their groups' annotators)
member_pages = [
    path("", members.members, name="members"),
    path("invite/", members.invite_people, name="members_invite"),
    path("seat/", members.member_seat, name="member_seat"),
    path("<int:user_id>/role/", members.member_role, name="member_role"),
    path("<int:user_id>/remove/", members.member_remove, name="member_remove"),
    path("<int:user_id>/move/", members.member_move, name="member_move"),
    path("<int:user_id>/resend/", members.resend, name="member_resend"),
]

# /s/<slug>/...
study = [
    path("", annotate.study, name="study"),
    path("queue/", annotate.queue, name="queue"),
    path("cards/", annotate.my_cards, name="my_cards"),
    path("cards/<int:turn_id>/", include(card)),
    path("sessions/", include(session_pages)),
    path("episodes/<int:episode_id>/", include(episode)),
    path("tags/", opensort_tags.tag_search, name="tag_search"),
    path("discuss/", discussion.discuss_queue, name="discuss_queue"),
    path("moderate/", discussion.moderate_queue, name="moderate_queue"),
    path("moderate/next/", nav.next_escalated, name="next_escalated"),
    path("moderate/episodes/", episode_moderation.moderate_episodes, name="moderate_episodes"),
    path("proposals/", proposals.proposals, name="proposals"),
    path("proposals/<int:proposal_id>/decide/", proposals.proposal_decide, name="proposal_decide"),
    path("taxonomy/", evolution.taxonomy, name="taxonomy"),
    path("taxonomy/preview/", evolution.taxonomy_preview, name="taxonomy_preview"),
    path("taxonomy/confirm/", evolution.taxonomy_confirm, name="taxonomy_confirm"),
    path("taxonomy-changes/", evolution.split_queue, name="split_queue"),
    path("taxonomy-changes/<int:annotation_id>/", evolution.split_answer, name="split_answer"),
    path("report/", report.report, name="report"),
    path("report/download/<str:fmt>/", report.report_download, name="report_download"),
    path("report/judges/", judges.judge_runs, name="judge_runs"),
    path("report/judges/start/", judges.judge_run_start, name="judge_run_start"),
    path(
        "report/judges/<int:run_id>/threshold/",
        judges.judge_run_rethreshold,
        name="judge_run_rethreshold",
    ),
    path("report/methods/", methods.methods, name="report_methods"),
    path("report/methods/download/<str:fmt>/", methods.methods_download, name="methods_download"),
    path("lead/", include(lead_pages)),
    path("jobs/", include(job_pages)),
    path("members/", include(member_pages)),
]

urlpatterns = [
    path("", annotate.home, name="home"),
    path("studies/new/", studies.new_study, name="study_new"),
    # no login: the container's and the load balancer's health check (views/health.py)
    path("healthz", health.healthz, name="healthz"),
    path("s/<slug:slug>/", include(study)),
]
