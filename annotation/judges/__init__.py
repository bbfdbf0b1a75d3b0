"""Machine judges (DESIGN.md): the model client (client.py), judge runs and rule-based
detectors. A judge never votes and is never shown to annotators or moderators."""
