//! The Function URL's HTTP request and response, reduced to what the handler
//! reads and writes, so the Lambda and the tests' local server share them.

use std::collections::BTreeMap;

use aws_lambda_events::event::lambda_function_urls::{
    LambdaFunctionUrlRequest, LambdaFunctionUrlResponse,
};

/// One request: method, the raw query string, lower-cased headers, body bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRequest {
    /// As the client sent it (`GET`, `POST`, …); the handler compares it
    /// case-insensitively.
    pub method: String,
    /// Everything after `?`, still percent-encoded: the vote (`t`) or run
    /// (`r`) token.
    pub query: String,
    /// Keyed by lower-case name, so lookups need not care how the client
    /// spelt it.
    pub headers: BTreeMap<String, String>,
    /// The form a POST carries (the vote's token and reason), decoded from
    /// base64 when the Function URL event was.
    pub body: Vec<u8>,
}

impl PageRequest {
    /// A header's value, whatever case `name` is given in.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The first value of a query parameter.
    pub fn query_param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The first value of a form-encoded body field.
    pub fn form_field(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(&self.body)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }
}

/// One response: status, headers, an HTML (or text) body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageResponse {
    /// The HTTP status the outcome maps to (see the handler's table).
    pub status: u16,
    /// In the order sent: the page's caching and security policy.
    pub headers: Vec<(&'static str, String)>,
    /// The page (empty for a HEAD).
    pub body: String,
}

impl PageResponse {
    /// A header's value, whatever case `name` is given in.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A Function URL event as the handler's request. A body that claims base64
/// and is not stays as its text bytes (the form then has no token: 400).
pub fn from_function_url(event: &LambdaFunctionUrlRequest) -> PageRequest {
    let parts = live_ci_aws::runtime::function_url_parts(event);
    PageRequest {
        method: parts.method.unwrap_or_else(|| "GET".into()),
        query: parts.query,
        headers: parts.headers,
        body: parts.body,
    }
}

/// The handler's answer as the Function URL response Lambda returns to the
/// client; a header value HTTP cannot carry is left out.
pub fn to_function_url(resp: &PageResponse) -> LambdaFunctionUrlResponse {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &resp.headers {
        if let Ok(value) = http::HeaderValue::from_str(value) {
            headers.insert(*name, value);
        }
    }
    // The event type is non-exhaustive: start from its default.
    let mut out = LambdaFunctionUrlResponse::default();
    out.status_code = i64::from(resp.status);
    out.headers = headers;
    out.body = Some(resp.body.clone());
    out
}
