-- A plan's placement options (docs/architecture.md#scheduling): at most max_per_node
-- instances of the plan on one node, and bin_pack (1) to fill the fullest node that fits
-- first instead of the emptiest. The defaults are what every plan got before, so plans of
-- an older ledger keep their behaviour.
ALTER TABLE plans ADD COLUMN max_per_node INTEGER NOT NULL DEFAULT 1;
ALTER TABLE plans ADD COLUMN bin_pack INTEGER NOT NULL DEFAULT 0;
