//! What a reader sees of live-ci's messages, for the screenshot tests: the
//! GitHub-flavoured markdown of a PR or deploy comment rendered to HTML the
//! way GitHub renders a comment, a Slack Block Kit payload rendered the way
//! Slack shows it, each wrapped in a page styled like its box, opened in
//! headless Chromium (`scripts/browser.sh`, playwright-core driving Debian's
//! chromium) by `browser/screens.js`, which screenshots it and reports what is
//! visible.
//!
//! Faithful where the tests look, not a copy of GitHub or Slack:
//! - markdown: CommonMark with GFM tables, strikethrough and task lists
//!   (pulldown-cmark). Bare URLs are not autolinked (GitHub does; live-ci's
//!   messages link with `[label](url)`).
//! - GitHub's sanitiser: raw HTML passes only for the allowed tags without
//!   attributes (`details` may carry `open`); any other tag is escaped and
//!   shows as text, so markup that a renderer let through is seen on the
//!   screenshot, not silently dropped as GitHub drops it. HTML comments (the
//!   comments' markers) pass, invisible as on GitHub. Links other than
//!   http(s), relative or `#` lose their address.
//! - a fenced `diff` block: each line coloured by its first character, `+`
//!   green, `-` red and `!` (changed) orange, as GitHub's highlighter does.
//!   Code blocks scroll past 420 px to keep screenshots small (GitHub shows
//!   them whole).
//! - Slack mrkdwn: `*bold*`, `_italic_`, `~strike~` only at word boundaries
//!   (so a zero-width space beside a marker keeps it literal, as in Slack),
//!   `` `code` ``, `<url|label>` links, `<!here>`-style mentions, and the
//!   three entities Slack asks senders to escape.

use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

use crate::repo_root;

/// Tags GitHub's sanitiser keeps (the ones live-ci's messages could use);
/// any other raw tag is shown as text.
const ALLOWED_TAGS: &[&str] = &[
    "details",
    "summary",
    "b",
    "strong",
    "i",
    "em",
    "code",
    "pre",
    "br",
    "p",
    "sub",
    "sup",
    "kbd",
    "ul",
    "ol",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
    "div",
    "span",
    "ins",
    "del",
    "s",
    "blockquote",
];

/// `s` escaped for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A raw HTML fragment as GitHub's sanitiser leaves it: allowed tags and
/// comments kept, every other tag (and any stray `<`) escaped.
fn sanitize_html(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        if let Some(end) = tail.find("-->").filter(|_| tail.starts_with("<!--")) {
            out.push_str(&tail[..end + 3]);
            rest = &tail[end + 3..];
            continue;
        }
        match tail.find('>') {
            Some(end) if allowed_tag(&tail[..=end]) => {
                out.push_str(&tail[..=end]);
                rest = &tail[end + 1..];
            }
            _ => {
                out.push_str("&lt;");
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `tag` (`<...>`) is an allowed tag without attributes (or
/// `<details open>`).
fn allowed_tag(tag: &str) -> bool {
    let inner = tag
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim_end_matches('/')
        .trim();
    let inner = inner.strip_prefix('/').unwrap_or(inner);
    let mut words = inner.split_whitespace();
    let name = words.next().unwrap_or_default().to_ascii_lowercase();
    let attrs: Vec<&str> = words.collect();
    ALLOWED_TAGS.contains(&name.as_str())
        && (attrs.is_empty() || (name == "details" && attrs == ["open"]))
}

/// Whether GitHub keeps a link's address.
fn safe_href(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with('#')
        || lower.starts_with('/')
        || !lower.contains(':')
}

/// The lines of a `diff` block, each in a span coloured by its first
/// character.
fn diff_block(code: &str) -> String {
    let mut out = String::from("<pre class=\"diff\"><code class=\"language-diff\">");
    for line in code.lines() {
        let class = match line.chars().next() {
            Some('+') => "gi",
            Some('-') => "gd",
            Some('!') => "gc",
            _ => "gn",
        };
        out.push_str(&format!(
            "<span class=\"{class}\">{}</span>\n",
            escape(line)
        ));
    }
    out.push_str("</code></pre>\n");
    out
}

/// GitHub-flavoured `markdown` as a GitHub comment body shows it (HTML).
pub fn github_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut events: Vec<Event> = Vec::new();
    let mut diff: Option<String> = None;
    for event in Parser::new_ext(markdown, options) {
        match (event, diff.as_mut()) {
            (Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))), None)
                if lang.as_ref() == "diff" =>
            {
                diff = Some(String::new());
            }
            (Event::Text(t), Some(code)) => code.push_str(&t),
            (Event::End(TagEnd::CodeBlock), Some(code)) => {
                events.push(Event::Html(CowStr::from(diff_block(code))));
                diff = None;
            }
            (Event::Html(raw), _) => events.push(Event::Html(sanitize_html(&raw).into())),
            (Event::InlineHtml(raw), _) => {
                events.push(Event::InlineHtml(sanitize_html(&raw).into()))
            }
            (
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }),
                _,
            ) => {
                let dest_url = if safe_href(&dest_url) {
                    dest_url
                } else {
                    CowStr::from("")
                };
                events.push(Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }));
            }
            (event, _) => events.push(event),
        }
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    html
}

/// GitHub's comment box around `body_html`, as a whole page.
pub fn github_page(title: &str, author: &str, body_html: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{GITHUB_CSS}</style></head>
<body><div class="timeline"><div class="comment">
<div class="comment-header"><strong>{author}</strong> <span class="bot">bot</span> commented</div>
<div class="markdown-body">
{body_html}</div></div></div></body></html>
"#,
        title = escape(title),
        author = escape(author),
    )
}

const GITHUB_CSS: &str = r#"
body { margin: 0; background: #fff; color: #1f2328;
  font-family: -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.5; }
.timeline { padding: 16px; max-width: 880px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; }
.comment-header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  border-radius: 6px 6px 0 0; color: #59636e; }
.comment-header strong { color: #1f2328; }
.bot { border: 1px solid #d1d9e0; border-radius: 2em; padding: 0 6px; font-size: 12px; }
.markdown-body { padding: 16px; overflow-wrap: anywhere; }
.markdown-body > :first-child { margin-top: 0; }
.markdown-body h3 { font-size: 1.25em; margin: 24px 0 16px; }
.markdown-body p, .markdown-body table, .markdown-body pre, .markdown-body details,
.markdown-body blockquote { margin: 0 0 16px; }
.markdown-body a { color: #0969da; text-decoration: none; }
.markdown-body a:hover { text-decoration: underline; }
.markdown-body code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 85%;
  background: rgba(129,139,152,0.12); border-radius: 6px; padding: .2em .4em; }
.markdown-body pre { background: #f6f8fa; border-radius: 6px; padding: 16px; overflow: auto;
  max-height: 420px; font-size: 85%; line-height: 1.45; }
.markdown-body pre code { background: transparent; padding: 0; font-size: 100%; }
.markdown-body table { border-collapse: collapse; }
.markdown-body th, .markdown-body td { border: 1px solid #d1d9e0; padding: 6px 13px; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body summary { cursor: pointer; }
.markdown-body blockquote { color: #59636e; border-left: .25em solid #d1d9e0; padding: 0 1em; }
.diff .gi { color: #116329; background: #dafbe1; }
.diff .gd { color: #82071e; background: #ffebe9; }
.diff .gc { color: #953800; background: #fff1e5; }
"#;

/// The characters before which a mrkdwn marker may open, and after which it
/// may close (besides whitespace and the ends of the text).
fn boundary(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => c.is_whitespace() || "()[]{}'\".,;:!?-".contains(c),
    }
}

/// Slack mrkdwn text as Slack shows it (HTML).
pub fn mrkdwn_html(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = i.checked_sub(1).map(|p| chars[p]);
        // <url|label>, <url>, <!here>
        if c == '<'
            && let Some(len) = chars[i + 1..].iter().position(|&c| c == '>')
        {
            let inner: String = chars[i + 1..i + 1 + len].iter().collect();
            let (url, label) = inner.split_once('|').unwrap_or((&inner, &inner));
            if let Some(special) = url.strip_prefix('!') {
                out.push_str(&format!(
                    "<span class=\"mention\">@{}</span>",
                    escape(special)
                ));
            } else {
                let url = unentity(url);
                let href = if safe_href(&url) { url.as_str() } else { "" };
                out.push_str(&format!(
                    "<a href=\"{}\">{}</a>",
                    escape(href),
                    escape(&unentity(label))
                ));
            }
            i += len + 2;
            continue;
        }
        let tag = match c {
            '*' => Some("b"),
            '_' => Some("i"),
            '~' => Some("s"),
            '`' => Some("code"),
            _ => None,
        };
        if let Some(tag) = tag
            && boundary(prev)
            && chars.get(i + 1).is_some_and(|n| !n.is_whitespace())
            && let Some(len) = chars[i + 1..].iter().position(|&m| m == c)
            && len > 0
            && !chars[i + len].is_whitespace()
            && boundary(chars.get(i + len + 2).copied())
        {
            let inner: String = chars[i + 1..i + 1 + len].iter().collect();
            let inner = if tag == "code" {
                escape(&unentity(&inner))
            } else {
                mrkdwn_html(&inner)
            };
            out.push_str(&format!("<{tag}>{inner}</{tag}>"));
            i += len + 2;
            continue;
        }
        // Entities Slack asks for: shown as the character.
        let rest: String = chars[i..chars.len().min(i + 5)].iter().collect();
        let (shown, skip) = if rest.starts_with("&amp;") {
            ("&amp;".to_string(), 5)
        } else if rest.starts_with("&lt;") {
            ("&lt;".to_string(), 4)
        } else if rest.starts_with("&gt;") {
            ("&gt;".to_string(), 4)
        } else if c == '\n' {
            ("<br>".to_string(), 1)
        } else {
            (escape(&c.to_string()), 1)
        };
        out.push_str(&shown);
        i += skip;
    }
    out
}

/// `&amp;`, `&lt;`, `&gt;` back to their characters.
fn unentity(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A Slack incoming-webhook payload's blocks as Slack shows the message
/// (HTML): header, section fields in two columns, section text, context.
pub fn slack_html(payload: &Value) -> String {
    let mut out = String::new();
    let text = |v: &Value| -> String {
        let t = v["text"].as_str().unwrap_or_default();
        match v["type"].as_str() {
            Some("plain_text") => escape(t),
            _ => mrkdwn_html(t),
        }
    };
    for block in payload["blocks"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("header") => out.push_str(&format!(
                "<div class=\"header\">{}</div>\n",
                text(&block["text"])
            )),
            Some("section") => {
                if block["text"].is_object() {
                    out.push_str(&format!(
                        "<div class=\"section\">{}</div>\n",
                        text(&block["text"])
                    ));
                }
                if let Some(fields) = block["fields"].as_array() {
                    out.push_str("<div class=\"fields\">");
                    for f in fields {
                        out.push_str(&format!("<div class=\"field\">{}</div>", text(f)));
                    }
                    out.push_str("</div>\n");
                }
            }
            Some("context") => {
                let parts: Vec<String> = block["elements"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(text)
                    .collect();
                out.push_str(&format!(
                    "<div class=\"context\">{}</div>\n",
                    parts.join(" ")
                ));
            }
            _ => out.push_str(&format!(
                "<div class=\"unknown\">unknown block {}</div>\n",
                escape(&block["type"].to_string())
            )),
        }
    }
    out
}

/// A Slack channel's message around `message_html`, as a whole page.
pub fn slack_page(app: &str, message_html: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{app}</title>
<style>{SLACK_CSS}</style></head>
<body><div class="channel"><div class="message">
<div class="avatar"></div><div class="content">
<div class="sender"><strong>{app}</strong> <span class="app">APP</span> <span class="time">07:00</span></div>
{message_html}</div></div></div></body></html>
"#,
        app = escape(app),
    )
}

const SLACK_CSS: &str = r#"
body { margin: 0; background: #fff; color: #1d1c1d;
  font-family: "Noto Sans", "Segoe UI", Helvetica, Arial, sans-serif; font-size: 15px; line-height: 1.47; }
.channel { padding: 16px; max-width: 720px; }
.message { display: flex; gap: 8px; }
.avatar { width: 36px; height: 36px; border-radius: 4px; background: #4a154b; flex: none; }
.content { flex: 1; }
.sender .app { background: rgba(29,28,29,.13); font-size: 10px; padding: 1px 3px; border-radius: 2px; }
.sender .time { color: #616061; font-size: 12px; }
.header { font-size: 18px; font-weight: 900; margin: 6px 0; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 16px; margin: 6px 0; }
.section { margin: 6px 0; }
.context { color: #616061; font-size: 13px; margin: 6px 0; }
a { color: #1264a3; text-decoration: none; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; color: #e01e5a;
  background: rgba(29,28,29,.04); border: 1px solid rgba(29,28,29,.13); border-radius: 3px; padding: 2px 3px; }
.mention { background: rgba(232,171,34,.2); color: #1d1c1d; }
"#;

/// `target/test-artifacts/<krate>/` (under `CARGO_TARGET_DIR` when set),
/// created.
pub fn artifacts(krate: &str) -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
        .join("test-artifacts")
        .join(krate);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("creating {}: {e}", dir.display());
    }
    dir
}

/// `scripts/browser.sh install` (idempotent), then the NODE_PATH holding
/// playwright-core.
pub fn node_path() -> String {
    let script = repo_root().join("scripts/browser.sh");
    let run = |arg: &str| {
        let out = Command::new("bash")
            .arg(&script)
            .arg(arg)
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "browser.sh {arg}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    run("install");
    run("node-path")
}

/// Opens `page_html` (written to `<dir>/<name>.html`) in headless Chromium
/// and returns what `browser/screens.js` saw: screenshots `<name>.png` and,
/// with `open_details`, `<name>-open.png` after clicking every summary;
/// per state, whether each of `probes` is visible and every `<details>`'s
/// summary and open state; the page's scripts, links, code spans and diff
/// lines.
pub fn open(dir: &Path, name: &str, page_html: &str, probes: &[&str], open_details: bool) -> Value {
    let file = dir.join(format!("{name}.html"));
    if let Err(e) = std::fs::write(&file, page_html) {
        panic!("writing {}: {e}", file.display());
    }
    let job = serde_json::json!({
        "file": file,
        "dir": dir,
        "name": name,
        "probes": probes,
        "openDetails": open_details,
    });
    let script = repo_root().join("crates/testkit/browser/screens.js");
    let out = Command::new("node")
        .arg(&script)
        .arg(job.to_string())
        .env("NODE_PATH", node_path())
        .output()
        .unwrap_or_else(|e| panic!("running node {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "browser: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "browser output {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let report = dir.join(format!("{name}.json"));
    if let Err(e) = std::fs::write(&report, format!("{seen:#}")) {
        panic!("writing {}: {e}", report.display());
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_html_keeps_allowed_tags_and_escapes_the_rest() {
        let html = github_html(
            "**`a<b>`**: x\n<details><summary>plan</summary>\n\n```diff\n+ add\n- del\n  same\n```\n\n</details>\n\n<script>alert(1)</script> <img src=x onerror=1>\n\n[x](javascript:alert(1))\n",
        );
        assert!(
            html.contains("<strong><code>a&lt;b&gt;</code></strong>"),
            "{html}"
        );
        assert!(html.contains("<details><summary>plan</summary>"), "{html}");
        assert!(html.contains("<span class=\"gi\">+ add</span>"), "{html}");
        assert!(html.contains("<span class=\"gd\">- del</span>"), "{html}");
        assert!(html.contains("&lt;script>alert(1)&lt;/script>"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=1>"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
    }

    #[test]
    fn mrkdwn_bold_links_and_literal_markers() {
        assert_eq!(
            mrkdwn_html(
                "*Unit*\nprod/\u{200B}*\u{200B}vpc\u{200B}*\u{200B} &amp; &lt;!channel&gt;"
            ),
            "<b>Unit</b><br>prod/\u{200B}*\u{200B}vpc\u{200B}*\u{200B} &amp; &lt;!channel&gt;"
        );
        assert_eq!(
            mrkdwn_html("<https://x/?a=1&amp;b=2|Open> · `c<d`"),
            "<a href=\"https://x/?a=1&amp;b=2\">Open</a> · <code>c&lt;d</code>"
        );
        assert_eq!(
            mrkdwn_html("<!here>"),
            "<span class=\"mention\">@here</span>"
        );
    }
}
