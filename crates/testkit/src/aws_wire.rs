//! AWS SDK clients against a wiremock server, the one place for it: the
//! adapters' request-exact tests script the calls on the wire (method, path,
//! `x-amz-target` of the awsJson protocols, headers, the exact body) and
//! answer AWS's wire shapes. Unlike the SDK's `test-util` mocks, this needs no
//! extra feature of any SDK crate, so tests build the same dependency graph
//! as the binaries (no second compile of the SDK) and go through the real
//! serializers and deserializers.
//!
//! A [`Wire`] mounts each [`Call`] as a wiremock mock answering once and
//! expected once, in the given order; [`Wire::verify`] then checks the counts
//! and that the requests came in that order. A request no call matches gets an
//! AWS error (`NoCallMatched`) whose message lists how it differs from the
//! closest expected call, so the adapter's error shows the difference.

use std::fmt::Write as _;

use serde_json::Value;
/// A call's answer, for what [`Call::answer_json`] and [`Call::error`] do not
/// cover (headers, other statuses).
pub use wiremock::ResponseTemplate;
use wiremock::matchers::{header, method, path};
use wiremock::{Match, Mock, MockServer, Request, Respond};

/// The region every scripted client signs for.
pub const REGION: &str = "us-west-2";

/// An SDK client of service crate `$sdk` (e.g. `aws_sdk_ecs`) talking to
/// `$wire` (a [`Wire`]): fixed region and static credentials, no retries
/// (each scripted call answers once; a test that wants the SDK's retries
/// builds its own config).
#[macro_export]
macro_rules! wire_client {
    ($sdk:ident, $wire:expr) => {
        $sdk::Client::from_conf(
            $sdk::Config::builder()
                .endpoint_url($wire.uri())
                .region($sdk::config::Region::new($crate::aws_wire::REGION))
                .credentials_provider($sdk::config::Credentials::new(
                    "AKIDWIRE",
                    "wire-secret",
                    None,
                    None,
                    "aws-wire",
                ))
                .retry_config($sdk::config::retry::RetryConfig::disabled())
                .behavior_version_latest()
                .build(),
        )
    };
}

/// What a call's request body must be.
#[derive(Debug, Clone)]
enum Body {
    /// Equal as JSON values (key order and whitespace aside).
    Json(Value),
    /// Exactly these bytes.
    Raw(Vec<u8>),
}

/// One expected request and its answer.
#[derive(Debug)]
pub struct Call {
    label: String,
    path: String,
    target: Option<String>,
    headers: Vec<(String, String)>,
    body: Body,
    answer: ResponseTemplate,
}

impl Call {
    /// A restJson1 `POST path` with exactly this JSON body, answering `200 {}`.
    pub fn rest_json(path: &str, body: Value) -> Call {
        Call {
            label: format!("POST {path}"),
            path: path.to_string(),
            target: None,
            headers: Vec::new(),
            body: Body::Json(body),
            answer: ResponseTemplate::new(200).set_body_json(serde_json::json!({})),
        }
    }

    /// An awsJson `POST /` of operation `target` (the `x-amz-target` header,
    /// e.g. `AmazonSSM.PutParameter`) with exactly this JSON body, answering `200 {}`.
    pub fn aws_json(target: &str, body: Value) -> Call {
        Call {
            label: target.to_string(),
            path: "/".into(),
            target: Some(target.to_string()),
            headers: Vec::new(),
            body: Body::Json(body),
            answer: ResponseTemplate::new(200).set_body_json(serde_json::json!({})),
        }
    }

    /// A `POST path` whose body is exactly `bytes` (a blob payload), answering `200`.
    pub fn raw(path: &str, bytes: &[u8]) -> Call {
        Call {
            label: format!("POST {path}"),
            path: path.to_string(),
            target: None,
            headers: Vec::new(),
            body: Body::Raw(bytes.to_vec()),
            answer: ResponseTemplate::new(200),
        }
    }

    /// The request must also carry this header.
    pub fn header(mut self, name: &str, value: &str) -> Call {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Answers `200` with this JSON body.
    pub fn answer_json(mut self, body: Value) -> Call {
        self.answer = ResponseTemplate::new(200).set_body_json(body);
        self
    }

    /// Answers this response.
    pub fn answer(mut self, answer: ResponseTemplate) -> Call {
        self.answer = answer;
        self
    }

    /// Answers the modelled error `code` with `message`, as both JSON
    /// protocols carry it (the `x-amzn-errortype` header and `__type`).
    pub fn error(self, status: u16, code: &str, message: &str) -> Call {
        self.answer(error_response(status, code, message))
    }
}

fn error_response(status: u16, code: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("x-amzn-errortype", code)
        .set_body_json(serde_json::json!({"__type": code, "message": message}))
}

/// Matches a request body against a call's expected body.
struct BodyIs(Body);

impl Match for BodyIs {
    fn matches(&self, request: &Request) -> bool {
        body_differences(&self.0, &request.body).is_empty()
    }
}

/// Why `body` is not `expected`, one line per difference (empty: equal).
fn body_differences(expected: &Body, body: &[u8]) -> Vec<String> {
    match expected {
        Body::Raw(bytes) if bytes.as_slice() == body => Vec::new(),
        Body::Raw(bytes) => vec![format!(
            "body: expected {:?}, got {:?}",
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(body)
        )],
        Body::Json(want) => match serde_json::from_slice::<Value>(body) {
            Ok(got) => {
                let mut out = Vec::new();
                json_differences("", want, &got, &mut out);
                out
            }
            Err(e) => vec![format!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(body)
            )],
        },
    }
}

/// The JSON pointers where `got` differs from `want`, with both values.
fn json_differences(at: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let here = format!("{at}/{k}");
                match g.get(k) {
                    Some(gv) => json_differences(&here, wv, gv, out),
                    None => out.push(format!("{here}: missing, expected {wv}")),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    out.push(format!("{at}/{k}: unexpected {gv}"));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                json_differences(&format!("{at}/{i}"), wv, gv, out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!("{}: expected {want}, got {got}", at_or_root(at))),
    }
}

fn at_or_root(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

/// What identifies a call on the wire besides its body.
#[derive(Debug, Clone)]
struct Expected {
    label: String,
    path: String,
    target: Option<String>,
    body: Body,
}

impl Expected {
    /// Why `request` is not this call (empty: it is).
    fn differences(&self, request: &Request) -> Vec<String> {
        let mut out = Vec::new();
        if request.method.as_str() != "POST" {
            out.push(format!("method: expected POST, got {}", request.method));
        }
        if request.url.path() != self.path {
            out.push(format!(
                "path: expected {:?}, got {:?}",
                self.path,
                request.url.path()
            ));
        }
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok());
        if target != self.target.as_deref() {
            out.push(format!(
                "x-amz-target: expected {:?}, got {target:?}",
                self.target
            ));
        }
        out.extend(body_differences(&self.body, &request.body));
        out
    }
}

/// Answers a request no call matched with an AWS error naming the closest
/// expected call and how the request differs from it.
struct NoCallMatched(Vec<Expected>);

impl NoCallMatched {
    fn explain(&self, request: &Request) -> String {
        let mut text = format!(
            "no scripted call matched {} {} ({})",
            request.method,
            request.url.path(),
            String::from_utf8_lossy(&request.body)
        );
        let closest = self
            .0
            .iter()
            .map(|e| (e.differences(request), e))
            .min_by_key(|(d, _)| d.len());
        if let Some((differences, e)) = closest {
            let _ = write!(text, "; closest expected call {:?} differs:", e.label);
            for d in differences {
                let _ = write!(text, "\n  {d}");
            }
        }
        text
    }
}

impl Respond for NoCallMatched {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        error_response(400, "NoCallMatched", &self.explain(request))
    }
}

/// A wiremock server scripted with calls in order.
#[derive(Debug)]
pub struct Wire {
    server: MockServer,
    expected: Vec<Expected>,
}

impl Wire {
    /// Starts a server answering each of `calls` once, in this order of
    /// preference (an identical request answered twice takes the next call).
    pub async fn start(calls: impl IntoIterator<Item = Call>) -> Wire {
        let server = MockServer::start().await;
        let mut expected = Vec::new();
        for (i, call) in calls.into_iter().enumerate() {
            let mut mock = Mock::given(method("POST")).and(path(call.path.as_str()));
            if let Some(target) = &call.target {
                mock = mock.and(header("x-amz-target", target.as_str()));
            }
            for (name, value) in &call.headers {
                mock = mock.and(header(name.as_str(), value.as_str()));
            }
            mock.and(BodyIs(call.body.clone()))
                .respond_with(call.answer)
                .up_to_n_times(1)
                .expect(1)
                .named(format!("call {i}: {}", call.label))
                .mount(&server)
                .await;
            expected.push(Expected {
                label: format!("call {i}: {}", call.label),
                path: call.path,
                target: call.target,
                body: call.body,
            });
        }
        // Lowest priority: only what no call matched.
        Mock::given(wiremock::matchers::any())
            .respond_with(NoCallMatched(expected.clone()))
            .with_priority(u8::MAX)
            .named("no call matched")
            .mount(&server)
            .await;
        Wire { server, expected }
    }

    /// The endpoint URL for the SDK client.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Panics unless every call was made once, in the scripted order, and no
    /// other request came.
    pub async fn verify(&self) {
        let received = self.server.received_requests().await.unwrap_or_default();
        for (i, request) in received.iter().enumerate() {
            let Some(e) = self.expected.get(i) else {
                panic!(
                    "request {i} beyond the {} scripted calls: {}",
                    self.expected.len(),
                    NoCallMatched(self.expected.clone()).explain(request)
                );
            };
            let differences = e.differences(request);
            assert!(
                differences.is_empty(),
                "request {i} is not {:?}:\n  {}",
                e.label,
                differences.join("\n  ")
            );
        }
        assert_eq!(
            received.len(),
            self.expected.len(),
            "{} of {} scripted calls were made",
            received.len(),
            self.expected.len()
        );
        self.server.verify().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two scripted restJson calls, `/first` then `/second`.
    async fn two_calls() -> Wire {
        Wire::start([
            Call::rest_json("/first", serde_json::json!({"n": 1})),
            Call::rest_json("/second", serde_json::json!({"n": 2})),
        ])
        .await
    }

    async fn post(wire: &Wire, path: &str, n: u32) -> u16 {
        reqwest::Client::new()
            .post(format!("{}{path}", wire.uri()))
            .json(&serde_json::json!({ "n": n }))
            .send()
            .await
            .map_or(0, |r| r.status().as_u16())
    }

    #[tokio::test]
    async fn calls_made_in_order_verify() {
        let wire = two_calls().await;
        assert_eq!(post(&wire, "/first", 1).await, 200);
        assert_eq!(post(&wire, "/second", 2).await, 200);
        wire.verify().await;
    }

    #[tokio::test]
    #[should_panic(expected = "request 0 is not \"call 0: POST /first\"")]
    async fn calls_made_out_of_order_fail_verify_naming_the_first_misplaced() {
        let wire = two_calls().await;
        // Each is answered (both mocks match their own request), so only the
        // order check can tell.
        assert_eq!(post(&wire, "/second", 2).await, 200);
        assert_eq!(post(&wire, "/first", 1).await, 200);
        wire.verify().await;
    }

    #[tokio::test]
    #[should_panic(expected = "1 of 2 scripted calls were made")]
    async fn a_call_not_made_fails_verify() {
        let wire = two_calls().await;
        assert_eq!(post(&wire, "/first", 1).await, 200);
        wire.verify().await;
    }

    #[tokio::test]
    #[should_panic(expected = "request 2 beyond the 2 scripted calls")]
    async fn a_request_beyond_the_script_fails_verify() {
        let wire = two_calls().await;
        assert_eq!(post(&wire, "/first", 1).await, 200);
        assert_eq!(post(&wire, "/second", 2).await, 200);
        // Unmatched: answered with the AWS error naming the closest call.
        assert_eq!(post(&wire, "/first", 1).await, 400);
        wire.verify().await;
    }

    #[test]
    fn differences_name_the_json_pointer_and_both_values() {
        let mut out = Vec::new();
        json_differences(
            "",
            &serde_json::json!({"a": [1, {"b": "x"}], "c": true}),
            &serde_json::json!({"a": [1, {"b": "y"}], "d": 1}),
            &mut out,
        );
        assert_eq!(
            out,
            [
                "/a/1/b: expected \"x\", got \"y\"",
                "/c: missing, expected true",
                "/d: unexpected 1",
            ]
        );
    }
}
