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
]
