-- Rows leave the database as one JSON text column, so both adapters decode the
-- same thing (the Data API's JSON records have no array or timestamp types):
-- times travel as milliseconds since the epoch.
CREATE OR REPLACE FUNCTION live_ci_ms(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT (extract(epoch FROM t) * 1000)::bigint $$;
