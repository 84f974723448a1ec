//! The deployment state machine of live-ci (Plan → Request Approval → Approval
//! Results → Apply → Success / Reject): its ASL template, rendered here exactly
//! as Terraform's `templatefile` renders it, and the written-down interfaces
//! between the state machine, the `terra-run` ECS task and the Lambdas.

pub mod asl;
pub mod error;
pub mod outcome;
pub mod payload;
pub mod render;
pub mod sfn;
pub mod vars;

pub use error::{Result, WorkflowError};
pub use outcome::Outcome;
pub use payload::{
    Action, ApplyResult, ApprovalDecision, ApprovalRequest, Decision, ExecutionStatus, PlanResult,
    SfnInput,
};
pub use render::{placeholders, render};
pub use sfn::{SfnEngine, SfnTaskTokens};
pub use vars::{DEPLOYMENT_TEMPLATE, DeploymentVars};
