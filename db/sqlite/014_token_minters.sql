-- Four eyes across minted tokens (docs/architecture.md#four-eyes): each token records the
-- actor that minted it, and an approval made with a token counts as its minters' too.
-- Tokens minted before this column existed take it from their token.created event.
ALTER TABLE tokens ADD COLUMN created_by TEXT;
UPDATE tokens SET created_by = (
  SELECT e.actor FROM events e
  WHERE e.kind = 'token.created' AND e.subject = 'token/' || tokens.name AND e.at <= tokens.created_at
  ORDER BY e.seq DESC LIMIT 1);
