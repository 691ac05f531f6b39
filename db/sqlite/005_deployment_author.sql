-- Who added a deployment (docs/architecture.md#human-approval). The operations the
-- controller asks for to roll a deployment out count as requested by this person, so the
-- four-eyes rule (auth.approver_must_differ) needs someone else to approve them. A
-- deployment of an older ledger has '' and its operations stay requested by `controller`.
ALTER TABLE deployments ADD COLUMN added_by TEXT NOT NULL DEFAULT '';
