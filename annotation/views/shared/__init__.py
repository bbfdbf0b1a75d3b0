"""What several page modules share, and no page module owns: the card as rendered after any
submit (card.py), the feedback after a submit (feedback.py), the home page (home.py), the
ways between pages (nav.py), the Jobs panel (jobs_panel.py), a group's box and parameter
(groups.py), the rounds table (rounds_table.py), the open sort's posted tags (tags.py) and
a part's turns in words (words.py). No page module imports another; they import these
(.importlinter, contract `view-modules`). Nothing here is a view."""
