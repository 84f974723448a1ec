//! The Function URL's HTTP request and response, reduced to what the handler
//! reads and writes, so the Lambda and the tests' local server share them.

use std::collections::BTreeMap;

use aws_lambda_events::event::lambda_function_urls::{
    LambdaFunctionUrlRequest, LambdaFunctionUrlResponse,
};

/// One request: method, the raw query string, lower-cased headers, body bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRequest {
    pub method: String,
    pub query: String,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl PageRequest {
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
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl PageResponse {
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
