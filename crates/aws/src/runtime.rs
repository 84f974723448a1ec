//! Glue the Function URL Lambdas share with their AWS runtime: a Function URL
//! request taken apart into plain parts so each handler works on its own
//! request type (the JSON log lines are `live_ci_boot`'s).

use std::collections::BTreeMap;

use aws_lambda_events::event::lambda_function_urls::LambdaFunctionUrlRequest;
use base64::Engine;

/// A Function URL request's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlRequestParts {
    /// `None` when the event carries no method (the caller picks its default).
    pub method: Option<String>,
    /// The raw query string, without `?` (empty when none).
    pub query: String,
    /// Header names lower-cased; values that are not text are left out.
    pub headers: BTreeMap<String, String>,
    /// Decoded when the event says base64. A body that claims base64 and is
    /// not stays as its text bytes, so signature and form checks refuse it
    /// rather than a decoding error hiding what was sent.
    pub body: Vec<u8>,
}

/// The parts of a Function URL event the handlers read.
pub fn function_url_parts(event: &LambdaFunctionUrlRequest) -> UrlRequestParts {
    let headers = event
        .headers
        .iter()
        .filter_map(|(k, v)| {
            Some((
                k.as_str().to_ascii_lowercase(),
                v.to_str().ok()?.to_string(),
            ))
        })
        .collect();
    let raw = event.body.clone().unwrap_or_default();
    let body = if event.is_base64_encoded {
        base64::engine::general_purpose::STANDARD
            .decode(raw.as_bytes())
            .unwrap_or_else(|_| raw.into_bytes())
    } else {
        raw.into_bytes()
    };
    UrlRequestParts {
        method: event.request_context.http.method.clone(),
        query: event.raw_query_string.clone().unwrap_or_default(),
        headers,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_bodies_are_decoded_and_bad_ones_kept() {
        let mut event = LambdaFunctionUrlRequest::default();
        event.is_base64_encoded = true;
        event.body = Some("dD1hYmM=".into());
        event.headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let parts = function_url_parts(&event);
        assert_eq!(parts.body, b"t=abc");
        assert_eq!(
            parts.headers.get("content-type").map(String::as_str),
            Some("application/x-www-form-urlencoded")
        );
        event.body = Some("not base64!".into());
        assert_eq!(function_url_parts(&event).body, b"not base64!");
        assert_eq!(function_url_parts(&event).method, None);
    }
}
