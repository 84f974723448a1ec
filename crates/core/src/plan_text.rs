//! Plans as terraform renders them (`show -no-color` of the saved plan), shown
//! on GitHub: per unit a one-line result and the plan text in a collapsible
//! ```` ```diff ```` block, fitted to GitHub's size limits (a comment body, a
//! check run's output). The one owner of that rendering: the pull-request
//! comment (pr-plan) and the check runs both call it.
//!
//! The plan text is repository output (resource names, values): every line is
//! made [`visible`] (no control character, no second line), the fence is
//! longer than any run of backticks inside, and every line starts with the
//! diff marker column this module writes, so the text can neither close its
//! block (a ```` ``` ```` or a `</details>` inside stays code) nor start a line
//! of the comment's own (a `/live-ci plan` command).
//!
//! Size is never fatal: when the whole does not fit, the longest plans are cut
//! first (each to the same number of characters, at a line boundary), each cut
//! saying how much was cut and where the whole plan is; then the plans are left
//! out; then the last units.

use crate::escape::{html, markdown, text::visible};

/// GitHub's limit on an issue (pull-request) comment body, in characters:
/// a longer one is refused with 422.
pub const COMMENT_LIMIT: usize = 65_536;

/// The Checks API's limit on a check run's `output.text` and
/// `output.summary`, in characters.
pub const CHECK_RUN_LIMIT: usize = 65_535;

/// What one unit shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitText<'a> {
    /// The unit's path (repository text).
    pub unit: &'a str,
    /// Its one-line result: the plan's summary (`1 to add, …`, outputs), or
    /// why it was not planned. Shown as a code span.
    pub result: &'a str,
    /// `show -no-color` of its saved plan, when there is one.
    pub plan: Option<&'a str>,
}

/// The marker column GitHub's `diff` highlighting reads: terraform's own
/// prefixes after the indentation are `+` (create), `-` (destroy), `~`
/// (update in place) and `-/+` / `+/-` (replace). `+` and `-` keep their
/// marker; `~` and both replacements become `!` (a changed line in diff
/// syntax). Any other line gets a space. The marker is added in front of
/// terraform's line, which stays whole.
pub fn marker(line: &str) -> char {
    let rest = line.trim_start_matches(' ');
    let word = rest.split(' ').next().unwrap_or("");
    match word {
        "+" => '+',
        "-" => '-',
        "~" | "-/+" | "+/-" => '!',
        _ => ' ',
    }
}

/// The plan's lines as they go into the `diff` block: each line [`visible`],
/// with its [`marker`] in front.
pub fn diff_lines(plan: &str) -> Vec<String> {
    plan.lines()
        .map(|line| {
            let line = visible(line);
            let mut out = String::with_capacity(line.len() + 1);
            out.push(marker(&line));
            out.push_str(&line);
            out
        })
        .collect()
}

/// A fence longer than any run of backticks in `lines` (at least three), so
/// nothing inside can close the block.
fn fence(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// Where the whole plan is, as markdown: the logs link when it is a web URL.
fn whole_plan_at(logs_url: Option<&str>) -> String {
    match logs_url.filter(|u| html::is_web_url(u)) {
        Some(url) => format!("the whole plan is in [the plan logs]({url})"),
        None => "the whole plan is in the task's log".to_string(),
    }
}

/// A plan's diff lines with their character counts (newline included).
struct Lines {
    lines: Vec<String>,
    chars: Vec<usize>,
    total: usize,
}

impl Lines {
    fn new(plan: &str) -> Self {
        let lines = diff_lines(plan);
        let chars: Vec<usize> = lines.iter().map(|l| l.chars().count() + 1).collect();
        let total = chars.iter().sum();
        Lines {
            lines,
            chars,
            total,
        }
    }

    /// How many leading lines fit in `cap` characters.
    fn kept(&self, cap: usize) -> usize {
        let mut used = 0;
        for (i, n) in self.chars.iter().enumerate() {
            used += n;
            if used > cap {
                return i;
            }
        }
        self.lines.len()
    }
}

/// The plan as a fenced `diff` block, at most `cap` characters of its lines
/// kept (whole lines); a cut one ends with a note of what was cut and where
/// the whole plan is.
fn plan_block(plan: &Lines, cap: usize, logs_url: Option<&str>) -> String {
    let kept = plan.kept(cap);
    let mut out = String::new();
    if kept > 0 {
        let fence = fence(&plan.lines[..kept]);
        out.push_str(&format!("{fence}diff\n"));
        for line in &plan.lines[..kept] {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&fence);
        out.push('\n');
    }
    if kept < plan.lines.len() {
        let shown: usize = plan.chars[..kept].iter().sum();
        out.push_str(&format!(
            "\n… {} of {} characters ({} of {} lines) cut to fit GitHub's size limit: {}.\n",
            plan.total - shown,
            plan.total,
            plan.lines.len() - kept,
            plan.lines.len(),
            whole_plan_at(logs_url)
        ));
    }
    out
}

/// How the units are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// Each plan with at most this many characters of its text.
    Plans(usize),
    /// No plan text; the first this many units.
    Results(usize),
}

fn render_units(
    units: &[UnitText<'_>],
    plans: &[Option<Lines>],
    fit: Fit,
    logs_url: Option<&str>,
) -> String {
    let shown = match fit {
        Fit::Plans(_) => units.len(),
        Fit::Results(n) => n.min(units.len()),
    };
    let mut out = String::new();
    for (u, plan) in units.iter().zip(plans).take(shown) {
        out.push_str(&format!(
            "**{}**: {}\n",
            markdown::code(u.unit),
            markdown::code(u.result)
        ));
        if let (Fit::Plans(cap), Some(plan)) = (fit, plan) {
            out.push_str("<details><summary>plan</summary>\n\n");
            out.push_str(&plan_block(plan, cap, logs_url));
            out.push_str("\n</details>\n");
        }
        out.push('\n');
    }
    if let Fit::Results(_) = fit {
        if plans.iter().any(Option::is_some) {
            out.push_str(&format!(
                "Plans are not shown: with them the comment would exceed GitHub's size limit; {}.\n",
                whole_plan_at(logs_url).replace("the whole plan is", "each plan is")
            ));
        }
        if shown < units.len() {
            out.push_str(&format!(
                "\n… and {} more unit(s), not shown to fit GitHub's size limit: see the plan logs.\n",
                units.len() - shown
            ));
        }
    }
    out
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Largest `n` in `0..=hi` with `fits(n)`, given `fits` is monotone
/// (true up to some point); `None` when not even `fits(0)`.
fn largest(hi: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
    if !fits(0) {
        return None;
    }
    let (mut lo, mut hi) = (0, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// `tail` cut to at most `max` characters at a line boundary (every line of
/// it is whole markdown), with a note when cut.
fn bounded_tail(tail: &str, max: usize) -> String {
    if chars(tail) <= max {
        return tail.to_string();
    }
    let lines: Vec<&str> = tail.lines().collect();
    let note = |cut: usize| format!("\n… {cut} more line(s) not shown: see the plan logs.\n");
    let keep = largest(lines.len(), |k| {
        chars(&lines[..k].join("\n")) + chars(&note(lines.len() - k)) <= max
    })
    .unwrap_or(0);
    format!("{}{}", lines[..keep].join("\n"), note(lines.len() - keep))
}

/// The comment (or check run text): `head`, the units, `tail`, in at most
/// `limit` characters. Plans are cut longest first, then left out, then the
/// last units; `tail` (repository text such as warnings) gets at most a
/// quarter of the limit. `head` is the caller's own short text.
pub fn fit(
    head: &str,
    units: &[UnitText<'_>],
    tail: &str,
    logs_url: Option<&str>,
    limit: usize,
) -> String {
    let tail = bounded_tail(tail, limit / 4);
    let budget = limit.saturating_sub(chars(head) + chars(&tail));
    let plans: Vec<Option<Lines>> = units.iter().map(|u| u.plan.map(Lines::new)).collect();
    let size = |fit: Fit| chars(&render_units(units, &plans, fit, logs_url));
    let longest = plans.iter().flatten().map(|p| p.total).max().unwrap_or(0);
    let chosen = if size(Fit::Plans(longest)) <= budget {
        Fit::Plans(longest)
    } else if let Some(cap) = largest(longest, |c| size(Fit::Plans(c)) <= budget) {
        Fit::Plans(cap)
    } else {
        Fit::Results(largest(units.len(), |n| size(Fit::Results(n)) <= budget).unwrap_or(0))
    };
    format!(
        "{head}{}{tail}",
        render_units(units, &plans, chosen, logs_url)
    )
}

/// One plan as a `diff` block of at most `limit` characters (a check run's
/// `output.text`), cut as [`fit`] cuts a plan.
pub fn fit_plan(plan: &str, logs_url: Option<&str>, limit: usize) -> String {
    let lines = Lines::new(plan);
    let cap = largest(lines.total, |c| {
        chars(&plan_block(&lines, c, logs_url)) <= limit
    })
    .unwrap_or(0);
    let block = plan_block(&lines, cap, logs_url);
    if chars(&block) <= limit {
        block
    } else {
        // Not even the note fits (a limit of a few characters).
        String::new()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const PLAN: &str = "\
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  + create
  ~ update in-place
-/+ destroy and then create replacement

Terraform will perform the following actions:

  # terraform_data.a will be created
  + resource \"terraform_data\" \"a\" {
      + id     = (known after apply)
      + input  = (sensitive value)
    }

  # terraform_data.b will be updated in-place
  ~ resource \"terraform_data\" \"b\" {
      ~ input  = \"1\" -> \"2\"
    }

  # terraform_data.c must be replaced
-/+ resource \"terraform_data\" \"c\" {
      - old    = \"x\" -> null
    }

Plan: 2 to add, 1 to change, 1 to destroy.";

    #[test]
    fn terraform_prefixes_become_diff_markers_in_front_of_the_whole_line() {
        let lines = diff_lines(PLAN);
        assert_eq!(
            lines[0],
            " Terraform used the selected providers to generate the following execution"
        );
        assert_eq!(lines[2], "+  + create");
        assert_eq!(lines[3], "!  ~ update in-place");
        assert_eq!(lines[4], "!-/+ destroy and then create replacement");
        assert_eq!(lines[9], "+  + resource \"terraform_data\" \"a\" {");
        assert_eq!(lines[11], "+      + input  = (sensitive value)");
        assert_eq!(lines[16], "!      ~ input  = \"1\" -> \"2\"");
        assert_eq!(lines[21], "-      - old    = \"x\" -> null");
        assert_eq!(lines[24], " Plan: 2 to add, 1 to change, 1 to destroy.");
        assert_eq!(marker("  +/- resource"), '!');
        assert_eq!(marker(" <= data \"x\" \"y\" {"), ' ');
        assert_eq!(marker("  ++ x"), ' ');
    }

    #[test]
    fn a_plan_that_fits_is_shown_whole_in_a_diff_block() {
        let body = fit(
            "HEAD\n",
            &[UnitText {
                unit: "dev/a",
                result: "2 to add, 1 to change, 1 to destroy",
                plan: Some(PLAN),
            }],
            "TAIL\n",
            Some("https://logs/x"),
            COMMENT_LIMIT,
        );
        let mut expected = String::from(
            "HEAD\n**`dev/a`**: `2 to add, 1 to change, 1 to destroy`\n\
             <details><summary>plan</summary>\n\n```diff\n",
        );
        for l in diff_lines(PLAN) {
            expected.push_str(&l);
            expected.push('\n');
        }
        expected.push_str("```\n\n</details>\n\nTAIL\n");
        assert_eq!(body, expected);
    }

    /// Plan text with a fence, `</details>`, HTML, a command on a line of its
    /// own and a carriage return: it stays inside its code block.
    #[test]
    fn plan_text_cannot_leave_its_block() {
        let hostile = "  + input = \"````\n</details>\n\n# Approved\n/live-ci plan\n<img src=x>\r/live-ci approve x\"";
        let body = fit(
            "",
            &[UnitText {
                unit: "dev/<b>x</b>",
                result: "failed `x`\n/live-ci plan",
                plan: Some(hostile),
            }],
            "",
            None,
            COMMENT_LIMIT,
        );
        assert_eq!(
            body,
            concat!(
                "**`dev/<b>x</b>`**: ``failed `x`\\u{a}/live-ci plan``\n",
                "<details><summary>plan</summary>\n\n",
                "`````diff\n",
                "+  + input = \"````\n",
                " </details>\n",
                " \n",
                " # Approved\n",
                " /live-ci plan\n",
                " <img src=x>\\u{d}/live-ci approve x\"\n",
                "`````\n\n</details>\n\n",
            )
        );
        // Inside the block, no line is a fence of the block's length or
        // more, and no line of the whole body starts a command.
        for line in body.lines() {
            assert!(!line.starts_with("/live-ci"), "{line:?}");
        }
    }

    fn synthetic_plan(resources: usize, tag: &str) -> String {
        let mut s = String::from("Terraform will perform the following actions:\n\n");
        for i in 0..resources {
            s.push_str(&format!(
                "  # terraform_data.{tag}[{i}] will be created\n  + resource \"terraform_data\" \"{tag}\" {{\n      + id = (known after apply)\n    }}\n\n"
            ));
        }
        s.push_str(&format!(
            "Plan: {resources} to add, 0 to change, 0 to destroy."
        ));
        s
    }

    #[test]
    fn the_longest_plans_are_cut_first_with_what_was_cut_and_where_the_whole_is() {
        let big = synthetic_plan(5000, "big");
        let small = synthetic_plan(3, "small");
        let units = [
            UnitText {
                unit: "dev/big",
                result: "5000 to add, 0 to change, 0 to destroy",
                plan: Some(&big),
            },
            UnitText {
                unit: "dev/small",
                result: "3 to add, 0 to change, 0 to destroy",
                plan: Some(&small),
            },
        ];
        let body = fit("H\n", &units, "", Some("https://logs/x"), COMMENT_LIMIT);
        assert!(chars(&body) <= COMMENT_LIMIT, "{}", chars(&body));
        assert!(chars(&body) > COMMENT_LIMIT - 1_000, "the room is used");
        // The small plan whole, the big one cut with a note.
        for l in diff_lines(&small) {
            assert!(body.contains(&format!("{l}\n")), "{l}");
        }
        let total = Lines::new(&big).total;
        let note = body
            .lines()
            .find(|l| l.starts_with("… "))
            .unwrap()
            .to_string();
        assert!(
            note.starts_with("… ")
                && note.contains(&format!(" of {total} characters ("))
                && note.contains(" of 25003 lines) cut to fit GitHub's size limit: the whole plan is in [the plan logs](https://logs/x)."),
            "{note}"
        );
        assert_eq!(body.matches("cut to fit").count(), 1);
        // The cut is at a line boundary, the block closed.
        assert_eq!(body.matches("```diff\n").count(), 2);
        assert_eq!(body.matches("\n```\n").count(), 2);
    }

    #[test]
    fn three_hundred_units_fit_by_cutting_then_leaving_out_plans_then_units() {
        let plans: Vec<String> = (0..300)
            .map(|i| synthetic_plan(1 + i % 7, &format!("r{i}")))
            .collect();
        let names: Vec<String> = (0..300)
            .map(|i| format!("live/acct/region/unit-{i:03}"))
            .collect();
        let units: Vec<UnitText> = (0..300)
            .map(|i| UnitText {
                unit: &names[i],
                result: "1 to add, 0 to change, 0 to destroy",
                plan: Some(&plans[i]),
            })
            .collect();
        // 300 units' plans do not fit even cut: every unit's result, no plan.
        let body = fit("H\n", &units, "T\n", None, COMMENT_LIMIT);
        assert!(chars(&body) <= COMMENT_LIMIT);
        for n in &names {
            assert!(body.contains(&format!("**`{n}`**: `1 to add")), "{n}");
        }
        assert!(!body.contains("<details>"));
        assert!(body.contains("Plans are not shown: with them the comment would exceed GitHub's size limit; each plan is in the task's log."));

        // 100 of them: every plan, the longer ones cut to the same length.
        let body = fit("H\n", &units[..100], "T\n", None, COMMENT_LIMIT);
        assert!(chars(&body) <= COMMENT_LIMIT);
        assert_eq!(body.matches("<details>").count(), 100);
        let cut = body
            .matches("cut to fit GitHub's size limit: the whole plan is in the task's log.")
            .count();
        assert!(cut > 0 && cut < 100, "{cut}");
        // the shortest plans (one resource) are whole
        for l in diff_lines(&plans[0]) {
            assert!(body.contains(&format!("{l}\n")), "{l}");
        }

        // With less still: the first units, and how many were left out.
        let body = fit("H\n", &units, "T\n", None, 10_000);
        assert!(chars(&body) <= 10_000);
        assert!(body.contains("**`live/acct/region/unit-000`**"));
        let left = body.lines().find(|l| l.starts_with("… and ")).unwrap();
        let shown = body.matches("**`live/").count();
        assert_eq!(
            left,
            format!(
                "… and {} more unit(s), not shown to fit GitHub's size limit: see the plan logs.",
                300 - shown
            )
        );
        assert!(body.ends_with("T\n"));
    }

    #[test]
    fn a_long_tail_is_cut_at_a_line() {
        let tail: String = (0..10_000).map(|i| format!("> `warning {i}`\n")).collect();
        let body = fit("H\n", &[], &tail, None, COMMENT_LIMIT);
        assert!(chars(&body) <= COMMENT_LIMIT);
        assert!(body.contains("> `warning 0`\n"));
        assert!(body.ends_with(" more line(s) not shown: see the plan logs.\n"));
    }

    #[test]
    fn one_plan_fits_a_check_run() {
        let big = synthetic_plan(5000, "big");
        let text = fit_plan(&big, Some("https://logs/x"), CHECK_RUN_LIMIT);
        assert!(chars(&text) <= CHECK_RUN_LIMIT);
        assert!(chars(&text) > CHECK_RUN_LIMIT - 500);
        assert!(text.starts_with("```diff\n Terraform will perform"));
        assert!(text.contains("cut to fit GitHub's size limit"));
        let small = fit_plan(PLAN, None, CHECK_RUN_LIMIT);
        assert!(!small.contains("cut to fit"));
        assert_eq!(small.lines().count(), diff_lines(PLAN).len() + 2);
    }
}
