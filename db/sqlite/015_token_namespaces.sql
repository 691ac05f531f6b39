-- Namespace-scoped tokens (docs/architecture.md#namespace-scoped-tokens): the namespaces a
-- token's role acts in, comma-separated (names hold no commas); NULL for every namespace,
-- as for every token minted before this column existed.
ALTER TABLE tokens ADD COLUMN namespaces TEXT;
