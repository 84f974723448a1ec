//! [`DeliveryLog`] over any [`Sql`] connection: each webhook delivery handled
//! once.

use live_ci_core::port::{DELIVERY_HORIZON, DeliveryClaim, DeliveryLog, STALE_CLAIM};

use super::Store;
use crate::error::{MetadbError, Result};
use crate::sql::statements as q;
use crate::sql::{Param, Sql};

impl<S: Sql> DeliveryLog for Store<S> {
    type Error = MetadbError;

    async fn claim_delivery(&self, delivery_id: &str) -> Result<DeliveryClaim> {
        let secs =
            |d: std::time::Duration| Param::Int(i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let rows = self
            .query_retrying(
                q::CLAIM_DELIVERY,
                &[
                    ("delivery_id", Param::text(delivery_id)),
                    ("horizon_secs", secs(DELIVERY_HORIZON)),
                    ("stale_secs", secs(STALE_CLAIM)),
                ],
            )
            .await?;
        Ok(if rows.is_empty() {
            DeliveryClaim::Duplicate
        } else {
            DeliveryClaim::Claimed
        })
    }

    async fn finish_delivery(&self, delivery_id: &str, handled: bool) -> Result<()> {
        let statement = if handled {
            q::DELIVERY_HANDLED
        } else {
            q::RELEASE_DELIVERY
        };
        self.sql
            .execute(statement, &[("delivery_id", Param::text(delivery_id))])
            .await?;
        Ok(())
    }
}
