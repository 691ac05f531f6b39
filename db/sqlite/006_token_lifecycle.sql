-- API tokens an admin creates and revokes (docs/architecture.md#http-api-and-auth): an optional
-- expiry (NULL: never), and who revoked a token. A name is unique among live tokens, so a
-- revoked name can be given to a new token; the index makes the name lookup of revoke cheap.
ALTER TABLE tokens ADD COLUMN expires_at TEXT;
ALTER TABLE tokens ADD COLUMN revoked_by TEXT;
CREATE INDEX tokens_name ON tokens (name);
