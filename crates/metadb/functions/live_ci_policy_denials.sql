-- The denials that apply to the execution's recorded plan: an empty array
-- when none (no denial, or they judged an earlier plan).
CREATE OR REPLACE FUNCTION live_ci_policy_denials(e executions) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce((SELECT d.denials FROM policy_denials d
                     WHERE d.execution = e.id AND d.plan_sha256 = e.plan_sha256), '[]')
    $$;
