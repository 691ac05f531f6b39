-- The text of every script version that became active, by its sha256 (content-addressed, so
-- a version kept by several rows or paths is stored once). A restart after a broken edit runs
-- the last good version of the file from here (docs/architecture.md#hot-reload).
CREATE TABLE script_texts (
  sha256 TEXT PRIMARY KEY,
  text   TEXT NOT NULL
);
