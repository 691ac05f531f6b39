-- Node agents (docs/agents.md#tokens): a token of role `agent` is bound to the one node its
-- agent serves; NULL for every other role.
ALTER TABLE tokens ADD COLUMN node TEXT;
