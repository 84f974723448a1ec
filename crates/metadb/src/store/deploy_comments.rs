//! The deploy comment store port over any [`Sql`] connection: the same SQL
//! text for PostgreSQL and the RDS Data API, like the rest of [`Store`].

use live_ci_core::deploy::RunId;
use live_ci_core::port::{CommentTarget, DeployCommentStore};

use crate::error::{MetadbError, Result};
use crate::sql::deploy_comment_statements as q;
use crate::sql::{Param, Sql};
use crate::store::{Store, decode_all};

/// A pull request number as the metadb stores it (bigint).
fn pr_param(pr_number: u64) -> Result<Param> {
    i64::try_from(pr_number)
        .map(Param::Int)
        .map_err(|_| MetadbError::Inconsistent(format!("pull request {pr_number:?} is too large")))
}

impl<S: Sql> DeployCommentStore for Store<S> {
    type Error = MetadbError;

    async fn deploy_comment_targets(
        &self,
        run_id: RunId,
        limit: u32,
    ) -> Result<Vec<CommentTarget>> {
        let rows = self
            .sql()
            .query(
                q::DEPLOY_COMMENT_TARGETS,
                &[
                    ("run_id", Param::Int(run_id)),
                    ("limit", Param::Int(i64::from(limit))),
                ],
            )
            .await?;
        decode_all(q::DEPLOY_COMMENT_TARGETS, &rows)
    }

    async fn claim_deploy_comment(
        &self,
        run_id: RunId,
        pr_number: u64,
        digest: &str,
    ) -> Result<bool> {
        let rows = self
            .sql()
            .query(
                q::CLAIM_DEPLOY_COMMENT,
                &[
                    ("run_id", Param::Int(run_id)),
                    ("pr_number", pr_param(pr_number)?),
                    ("digest", Param::text(digest)),
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn release_deploy_comment(
        &self,
        run_id: RunId,
        pr_number: u64,
        digest: &str,
    ) -> Result<()> {
        self.sql()
            .execute(
                q::RELEASE_DEPLOY_COMMENT,
                &[
                    ("run_id", Param::Int(run_id)),
                    ("pr_number", pr_param(pr_number)?),
                    ("digest", Param::text(digest)),
                ],
            )
            .await?;
        Ok(())
    }
}
