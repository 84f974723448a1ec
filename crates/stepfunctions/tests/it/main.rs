//! The integration tests of live-ci-stepfunctions: the state machine definition, the engine adapter and the definition run in LocalStack: one test binary (one link) for the
//! crate, each former `tests/*.rs` a module.

mod definition;
mod engine;
mod localstack;
