"""What both front doors do (DESIGN.md, Architecture): the pages (annotation/views), the REST
API (annotation/api) and the management commands call these, so a rule lives in one place and
the same input gives the same result whichever door it came through. One module per family
of actions; each raises its own refusal (a ValueError) naming what is wrong."""
