//! [`SweepStore`] over any [`Sql`] connection: the trunk sweep's launch claim
//! and the executions it re-checks.

use live_ci_core::deploy::ExecutionRecord;
use live_ci_core::port::SweepStore;

use super::{Store, decode_all};
use crate::error::{MetadbError, Result};
use crate::sql::statements as q;
use crate::sql::{Param, Sql};

impl<S: Sql> SweepStore for Store<S> {
    type Error = MetadbError;

    async fn claim_trunk_launch(&self, commit_id: &str, cooldown_secs: u32) -> Result<Option<u32>> {
        let rows = self
            .sql
            .query(
                q::CLAIM_TRUNK_LAUNCH,
                &[
                    ("commit_id", Param::text(commit_id)),
                    ("cooldown_secs", Param::Int(i64::from(cooldown_secs))),
                ],
            )
            .await?;
        rows.first()
            .map(|n| {
                n.parse().map_err(|_| MetadbError::Decode {
                    statement: q::CLAIM_TRUNK_LAUNCH
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .into(),
                    message: format!("{n:?} is not a launch count"),
                })
            })
            .transpose()
    }

    async fn stale_claims(&self, older_than_secs: u32) -> Result<Vec<ExecutionRecord>> {
        let rows = self
            .sql
            .query(
                q::STALE_CLAIMS,
                &[("older_than_secs", Param::Int(i64::from(older_than_secs)))],
            )
            .await?;
        decode_all(q::STALE_CLAIMS, &rows)
    }

    async fn running_with_arn(&self, limit: u32) -> Result<Vec<ExecutionRecord>> {
        let rows = self
            .sql
            .query(
                q::RUNNING_WITH_ARN,
                &[("limit", Param::Int(i64::from(limit)))],
            )
            .await?;
        decode_all(q::RUNNING_WITH_ARN, &rows)
    }
}
