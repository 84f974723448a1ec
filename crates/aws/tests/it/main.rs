//! The integration tests of live-ci-aws: the AWS adapters against LocalStack or request-exact SDK mocks: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod ecs_launcher;
mod kms_localstack;
mod lambda_invoker;
mod ses;
mod sns;
mod ssm_localstack;
