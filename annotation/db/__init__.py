"""Vendor-specific SQL, in one place (PostgreSQL: COPY, typed arrays, ON CONFLICT; SQLite:
json_each, executemany), behind functions that give the same result on both:

- sql.py: the bulk paths' helpers (ids as one parameter, sequences, COPY in and out);
- columns.py: integer columns of a query into numpy arrays (COPY binary on PostgreSQL);
- inserts.py: inserts where a row may be there already (card states, assignments);
- options.py: WriterOptions, how the bulk writer writes on a connection (COPY, its thread,
  the fingerprint check), built once and passed in;
- labels.py, episodes.py: the label and episode imports' writes (COPY on PostgreSQL);
- arrow.py: a query's rows as an Arrow table (COPY ... TO STDOUT on PostgreSQL);
- snapshot.py: one snapshot for a reader's many queries (REPEATABLE READ on PostgreSQL);
- engines.py: each engine's connection options (SQLite's PRAGMAs), read by config/settings;
- textsearch.py: the browser's text search through an index (pg_trgm GIN on PostgreSQL, an
  FTS5 trigram table kept by triggers on SQLite), the same turns as `icontains` finds.
"""
