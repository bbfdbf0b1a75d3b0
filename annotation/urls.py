from __future__ import annotations

from django.urls import path

from . import views, views_discussion

urlpatterns = [
    path("", views.home, name="home"),
    path("s/<slug:slug>/", views.study, name="study"),
    path("s/<slug:slug>/queue/", views.queue, name="queue"),
    path("s/<slug:slug>/cards/", views.my_cards, name="my_cards"),
    path("s/<slug:slug>/cards/<int:turn_id>/", views.card, name="card"),
    path("s/<slug:slug>/cards/<int:turn_id>/context/", views.card_context, name="card_context"),
    path(
        "s/<slug:slug>/cards/<int:turn_id>/discussion/",
        views_discussion.discussion,
        name="discussion",
    ),
    # discussion rounds and moderation (annotation/views_discussion.py)
    path("s/<slug:slug>/discuss/", views_discussion.discuss_queue, name="discuss_queue"),
    path("s/<slug:slug>/moderate/", views_discussion.moderate_queue, name="moderate_queue"),
    path(
        "s/<slug:slug>/cards/<int:turn_id>/discussion/context/",
        views_discussion.discussion_context,
        name="discussion_context",
    ),
    path("s/<slug:slug>/cards/<int:turn_id>/comments/", views_discussion.comment, name="comment"),
    path("s/<slug:slug>/cards/<int:turn_id>/decide/", views_discussion.decide, name="decide"),
    path(
        "s/<slug:slug>/cards/<int:turn_id>/timeline/",
        views_discussion.card_timeline,
        name="card_timeline",
    ),
]
