"""Accounts without the admin: the study's members, their roles and seats (seats.py), the
invitation of annotators from a pasted list (roster.py, invitations.py)."""
