//! The Function URL's HTTP request and response, reduced to what the handler
//! reads: lower-cased headers and the raw body bytes (signatures cover bytes).

use std::collections::BTreeMap;

use aws_lambda_events::event::lambda_function_urls::{
    LambdaFunctionUrlRequest, LambdaFunctionUrlResponse,
};
use serde_json::Value;

/// A webhook delivery as the handler sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookRequest {
    /// The HTTP method as the Function URL gave it (`POST` when it gave none);
    /// only `POST` is handled.
    pub method: String,
    /// Header names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The body exactly as GitHub signed it (base64 decoded when the event says so).
    pub body: Vec<u8>,
}

impl WebhookRequest {
    /// The value of header `name`, matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// The handler's answer to GitHub: always a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookResponse {
    /// The HTTP status code (200 handled or ignored, 4xx refused, 5xx retry).
    pub status: u16,
    /// The JSON body, saying what was done or why not.
    pub body: Value,
}

/// A Function URL event as the handler's request. A body that claims base64
/// and is not is kept as its text bytes, so the signature check refuses it.
pub fn from_function_url(event: &LambdaFunctionUrlRequest) -> WebhookRequest {
    let parts = live_ci_aws::runtime::function_url_parts(event);
    WebhookRequest {
        method: parts.method.unwrap_or_else(|| "POST".into()),
        headers: parts.headers,
        body: parts.body,
    }
}

/// The handler's response as a Function URL response (`application/json`).
pub fn to_function_url(resp: &WebhookResponse) -> LambdaFunctionUrlResponse {
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    // The event type is non-exhaustive: start from its default.
    let mut out = LambdaFunctionUrlResponse::default();
    out.status_code = i64::from(resp.status);
    out.headers = headers;
    out.body = Some(resp.body.to_string());
    out
}
