//! The Lambda runtime loop and the one conversion of a handler's error into
//! the runtime's `Diagnostic`: `error_type` is the name CloudWatch, the DLQ
//! and Step Functions see, derived once here from the error's kind
//! ([`ErrorKind::name`], `RETRYABLE_ERROR` / `PERMANENT_ERROR`), and
//! `error_message` is the error's own message.

use std::borrow::Cow;
use std::future::Future;

use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};
use live_ci_core::port::ErrorKind;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::BootError;

/// A handler's error as the runtime reports it.
pub trait Classified: std::fmt::Display {
    /// Whether invoking again can help.
    fn kind(&self) -> ErrorKind;

    /// The `Diagnostic`'s `error_type`: the kind's name. A Lambda whose
    /// errors had a name of their own before kinds keeps it here.
    fn error_type(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.kind().name())
    }
}

/// A handler that cannot fail.
impl Classified for std::convert::Infallible {
    fn kind(&self) -> ErrorKind {
        match *self {}
    }
}

/// A handler whose errors are messages (approval-response's invoke
/// dispatch): permanent, named as `lambda_runtime`'s own `From<String>`
/// named them (the type of a reference to the message).
impl Classified for String {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Permanent
    }

    fn error_type(&self) -> Cow<'static, str> {
        Cow::Borrowed(std::any::type_name::<&String>())
    }
}

/// What the runtime reports for `error`.
pub fn diagnostic<E: Classified + ?Sized>(error: &E) -> Diagnostic {
    Diagnostic {
        error_type: error.error_type().into_owned(),
        error_message: error.to_string(),
    }
}

/// Serves every invocation with `handler` until the runtime stops; a
/// failed invocation is reported as [`diagnostic`] says.
pub async fn serve<E, R, Err, F, Fut>(handler: F) -> Result<(), BootError>
where
    E: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
    Err: Classified,
    F: Fn(E) -> Fut,
    Fut: Future<Output = Result<R, Err>> + Send,
{
    let handler = &handler;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<E>| async move {
        handler(event.payload).await.map_err(|e| diagnostic(&e))
    }))
    .await
    .map_err(|e| BootError::Runtime(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("metadb: {0:?} went away")]
    struct Gone(ErrorKind);

    impl Classified for Gone {
        fn kind(&self) -> ErrorKind {
            self.0
        }
    }

    /// The error's kind names it; its message is its own.
    #[test]
    fn the_error_type_is_the_kinds_name_and_the_message_the_errors() {
        let d = diagnostic(&Gone(ErrorKind::Retryable));
        assert_eq!(d.error_type, live_ci_core::port::RETRYABLE_ERROR);
        assert_eq!(d.error_message, "metadb: Retryable went away");
        let d = diagnostic(&Gone(ErrorKind::Permanent));
        assert_eq!(d.error_type, live_ci_core::port::PERMANENT_ERROR);
        let d = diagnostic(&"not a Function URL request".to_string());
        assert_eq!(
            d.error_type,
            lambda_runtime::Diagnostic::from(String::new()).error_type
        );
        assert_eq!(d.error_message, "not a Function URL request");
    }
}
