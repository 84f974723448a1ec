//! The drift store port over any [`Sql`] connection: the same SQL text for
//! PostgreSQL and the RDS Data API, like the rest of [`Store`].

use live_ci_core::drift::{DriftResult, UnitDrift};
use live_ci_core::path::RepoPath;
use live_ci_core::port::DriftStore;

use crate::error::{MetadbError, Result};
use crate::sql::drift_statements as q;
use crate::sql::{Param, Sql};
use crate::store::{Store, decode, decode_all, decode_first};

impl<S: Sql> DriftStore for Store<S> {
    type Error = MetadbError;

    async fn record_drift_check(&self, commit_id: &str, results: &[UnitDrift]) -> Result<i64> {
        let rows: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "unit": r.unit.as_str(),
                    "state": r.state.as_str(),
                    "message": r.message,
                    "add": r.counts.add,
                    "change": r.counts.change,
                    "destroy": r.counts.destroy,
                })
            })
            .collect();
        let rows = self
            .sql()
            .query(
                q::RECORD_DRIFT_CHECK,
                &[
                    ("commit_id", Param::text(commit_id)),
                    (
                        "results",
                        Param::Json(serde_json::Value::Array(rows).to_string()),
                    ),
                ],
            )
            .await?;
        let row = rows.first().ok_or_else(|| {
            MetadbError::Inconsistent(format!("no drift check was recorded for {commit_id:?}"))
        })?;
        decode(q::RECORD_DRIFT_CHECK, row)
    }

    async fn latest_drift(&self) -> Result<Vec<DriftResult>> {
        let rows = self.sql().query(q::LATEST_DRIFT, &[]).await?;
        decode_all(q::LATEST_DRIFT, &rows)
    }

    async fn drift_issue(&self, unit: &RepoPath) -> Result<Option<u64>> {
        let rows = self
            .sql()
            .query(q::DRIFT_ISSUE, &[("unit", Param::text(unit.as_str()))])
            .await?;
        decode_first(q::DRIFT_ISSUE, &rows)
    }

    async fn latest_run_id(&self) -> Result<i64> {
        let rows = self.sql().query(q::LATEST_RUN_ID, &[]).await?;
        let row = rows
            .first()
            .ok_or_else(|| MetadbError::Inconsistent("max(run_id) returned no row".into()))?;
        decode(q::LATEST_RUN_ID, row)
    }

    async fn units_of_runs_after(&self, run_id: i64) -> Result<Vec<String>> {
        let rows = self
            .sql()
            .query(q::UNITS_OF_RUNS_AFTER, &[("run_id", Param::Int(run_id))])
            .await?;
        decode_all(q::UNITS_OF_RUNS_AFTER, &rows)
    }

    async fn set_drift_issue(&self, unit: &RepoPath, issue: Option<u64>) -> Result<()> {
        let unit_param = ("unit", Param::text(unit.as_str()));
        match issue {
            Some(n) => {
                let n = i64::try_from(n).map_err(|_| {
                    MetadbError::Inconsistent(format!("issue number {n:?} is too large"))
                })?;
                self.sql()
                    .execute(q::SET_DRIFT_ISSUE, &[unit_param, ("issue", Param::Int(n))])
                    .await?;
            }
            None => {
                self.sql()
                    .execute(q::CLEAR_DRIFT_ISSUE, &[unit_param])
                    .await?;
            }
        }
        Ok(())
    }
}
