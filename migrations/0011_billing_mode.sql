-- Whether this installation bills payload add-ons through Stripe ('stripe') or grants them without
-- charge ('off'). The first control or console process that reaches the database records its own
-- mode; after that a process whose settings say otherwise refuses to start, and one with billing
-- off refuses to grant a larger size while the row says 'stripe' (so a mis-configured replica never
-- gives a billed member a free add-on). `aqs admin billing-mode` changes it on purpose.
CREATE TABLE installation (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    billing_mode text NOT NULL CHECK (billing_mode IN ('stripe', 'off')),
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
