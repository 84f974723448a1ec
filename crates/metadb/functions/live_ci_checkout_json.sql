-- `checkout` as the port's `CachedCheckout` ({"key", "sha256"}) or null; the
-- run and execution JSON carry it as one field.
CREATE OR REPLACE FUNCTION live_ci_checkout_json(key text, sha256 text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN key IS NULL THEN NULL
                ELSE jsonb_build_object('key', key, 'sha256', sha256) END
    $$;
