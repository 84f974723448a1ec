//! Command templates as shell text: where `{cfg_path}` and `{plan_file}` may
//! stand, how they are filled in, and where extra Terraform flags go. A unit's
//! path comes from the pull request (directory names are the author's), so a
//! placeholder is only ever substituted as a whole unquoted shell word (or as
//! the value of a `-flag=`), shell-quoted: inside quotes, a comment, a command
//! substitution or after a backslash the quoting would not hold, and such a
//! template is refused at load. Flags live-ci adds (`-out=`, `-destroy
//! -target=…`, `-detailed-exitcode`) go into the terraform/terragrunt
//! invocation itself, never after the end of a command that may be a pipeline.

use std::ops::Range;

/// Placeholder for the unit's repository-relative directory.
pub const CFG_PATH: &str = "{cfg_path}";
/// Placeholder for the saved plan's absolute path (filled in by `terra-run`).
pub const PLAN_FILE: &str = "{plan_file}";

/// The programs whose invocation receives live-ci's flags.
const TERRAFORM_PROGRAMS: &[&str] = &["terraform", "terragrunt", "tofu"];

/// How a byte of a command is read by the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// Unquoted, at the top level.
    Plain,
    /// Inside single or double quotes.
    Quoted,
    /// Escaped by a backslash.
    Escaped,
    /// Inside `$(…)`, `${…}` or backticks.
    Nested,
    /// In a `#` comment.
    Comment,
}

/// A token of the top level of a command: a word or a control/redirection operator.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Range<usize>),
    Op(Range<usize>),
}

/// The command split into tokens, with each byte's context.
#[derive(Debug)]
struct Lexed {
    tokens: Vec<Token>,
    ctx: Vec<Ctx>,
}

fn lex(text: &str) -> Result<Lexed, String> {
    let b = text.as_bytes();
    let mut ctx = vec![Ctx::Plain; b.len()];
    let mut tokens = Vec::new();
    let mut word_start: Option<usize> = None;
    let mut i = 0;
    let end_word = |tokens: &mut Vec<Token>, start: &mut Option<usize>, at: usize| {
        if let Some(s) = start.take() {
            tokens.push(Token::Word(s..at));
        }
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' => {
                end_word(&mut tokens, &mut word_start, i);
                i += 1;
            }
            b'\n' => {
                end_word(&mut tokens, &mut word_start, i);
                tokens.push(Token::Op(i..i + 1));
                i += 1;
            }
            b'#' if word_start.is_none() => {
                while i < b.len() && b[i] != b'\n' {
                    ctx[i] = Ctx::Comment;
                    i += 1;
                }
            }
            b'\'' => {
                word_start.get_or_insert(i);
                let close = text[i + 1..]
                    .find('\'')
                    .map(|n| i + 1 + n)
                    .ok_or_else(|| format!("unterminated single quote at byte {i}"))?;
                ctx[i..=close].fill(Ctx::Quoted);
                i = close + 1;
            }
            b'"' => {
                word_start.get_or_insert(i);
                let close = skip_double_quoted(b, i)?;
                ctx[i..=close].fill(Ctx::Quoted);
                i = close + 1;
            }
            b'\\' => {
                word_start.get_or_insert(i);
                let last = (i + 1).min(b.len() - 1);
                ctx[i..=last].fill(Ctx::Escaped);
                i = last + 1;
            }
            b'`' => {
                word_start.get_or_insert(i);
                let close = skip_backticks(b, i)?;
                ctx[i..=close].fill(Ctx::Nested);
                i = close + 1;
            }
            b'$' if matches!(b.get(i + 1), Some(b'(') | Some(b'{')) => {
                word_start.get_or_insert(i);
                let close = skip_nested(b, i + 1)?;
                ctx[i..=close].fill(Ctx::Nested);
                i = close + 1;
            }
            b'|' | b'&' | b';' | b'(' | b')' | b'<' | b'>' => {
                end_word(&mut tokens, &mut word_start, i);
                let len = operator_len(&b[i..]);
                if &b[i..i + len] == b"<<" || &b[i..i + len] == b"<<-" {
                    return Err(format!(
                        "here-documents (byte {i}) are not supported in command templates"
                    ));
                }
                tokens.push(Token::Op(i..i + len));
                i += len;
            }
            _ => {
                word_start.get_or_insert(i);
                i += 1;
            }
        }
    }
    end_word(&mut tokens, &mut word_start, b.len());
    Ok(Lexed { tokens, ctx })
}

fn operator_len(rest: &[u8]) -> usize {
    const OPS: &[&[u8]] = &[
        b"<<-", b"&&", b"||", b";;", b">>", b">&", b"<&", b"&>", b">|", b"<>", b"<<",
    ];
    OPS.iter()
        .find(|op| rest.starts_with(op))
        .map_or(1, |op| op.len())
}

/// The index of the `"` closing the one at `open` (backslash escapes and
/// nested substitutions honoured).
fn skip_double_quoted(b: &[u8], open: usize) -> Result<usize, String> {
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i),
            b'`' => i = skip_backticks(b, i)? + 1,
            b'$' if matches!(b.get(i + 1), Some(b'(') | Some(b'{')) => {
                i = skip_nested(b, i + 1)? + 1;
            }
            _ => i += 1,
        }
    }
    Err(format!("unterminated double quote at byte {open}"))
}

fn skip_backticks(b: &[u8], open: usize) -> Result<usize, String> {
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return Ok(i),
            _ => i += 1,
        }
    }
    Err(format!("unterminated backquote at byte {open}"))
}

/// The index of the bracket closing the `(` or `{` at `open`, quotes inside
/// honoured.
fn skip_nested(b: &[u8], open: usize) -> Result<usize, String> {
    let (opening, closing) = if b[open] == b'(' {
        (b'(', b')')
    } else {
        (b'{', b'}')
    };
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'\'' => {
                i = b[i + 1..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|n| i + 1 + n)
                    .ok_or_else(|| format!("unterminated single quote at byte {i}"))?;
            }
            b'"' => i = skip_double_quoted(b, i)?,
            b'`' => i = skip_backticks(b, i)?,
            c if c == opening => depth += 1,
            c if c == closing => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(format!(
        "unterminated {} at byte {}",
        if opening == b'(' { "$(" } else { "${" },
        open - 1
    ))
}

/// One `{cfg_path}` / `{plan_file}` in a command, and whether it may be filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Occurrence {
    name: &'static str,
    range: Range<usize>,
    problem: Option<String>,
}

fn occurrences(text: &str, lexed: &Lexed) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for name in [CFG_PATH, PLAN_FILE] {
        for (at, _) in text.match_indices(name) {
            // `${cfg_path}` is the shell's variable, not a placeholder.
            if at > 0 && text.as_bytes()[at - 1] == b'$' {
                continue;
            }
            let range = at..at + name.len();
            out.push(Occurrence {
                name,
                problem: placement_problem(text, lexed, &range),
                range,
            });
        }
    }
    out.sort_by_key(|o| o.range.start);
    out
}

/// Why a placeholder at `range` cannot be filled in safely, if it cannot.
fn placement_problem(text: &str, lexed: &Lexed, range: &Range<usize>) -> Option<String> {
    let contexts = &lexed.ctx[range.clone()];
    let worst = [Ctx::Comment, Ctx::Nested, Ctx::Escaped, Ctx::Quoted]
        .into_iter()
        .find(|c| contexts.contains(c));
    if let Some(c) = worst {
        return Some(
            match c {
                Ctx::Comment => "is inside a comment",
                Ctx::Nested => "is inside a command substitution or ${…}",
                Ctx::Escaped => "is escaped with a backslash",
                _ => "is inside quotes",
            }
            .to_string(),
        );
    }
    let word = lexed.tokens.iter().find_map(|t| match t {
        Token::Word(w) if w.start <= range.start && range.end <= w.end => Some(w.clone()),
        _ => None,
    })?;
    let prefix = &text[word.start..range.start];
    let whole = prefix.is_empty() || is_flag_prefix(prefix);
    if whole && range.end == word.end {
        return None;
    }
    Some(format!(
        "is glued to other text in the word {:?}",
        &text[word.clone()]
    ))
}

/// `-name=` or `--name=`: the one form in which a placeholder may share its
/// word (Terraform's `-out={plan_file}`, `-chdir={cfg_path}`).
fn is_flag_prefix(prefix: &str) -> bool {
    let Some(body) = prefix.strip_suffix('=') else {
        return false;
    };
    let name = body
        .strip_prefix("--")
        .or_else(|| body.strip_prefix('-'))
        .unwrap_or("");
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A command template with `{cfg_path}` and `{plan_file}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandTemplate {
    template: String,
}

impl CommandTemplate {
    /// Checks that the template is not empty, uses no placeholder other than
    /// `{cfg_path}` and `{plan_file}` (a typo would otherwise reach the shell),
    /// and uses those only as whole unquoted words or `-flag=` values. Errors
    /// quote the template.
    pub fn new(template: &str) -> Result<Self, String> {
        if template.trim().is_empty() {
            return Err("command template is empty".into());
        }
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let after = &rest[open..];
            let Some(close) = after.find('}') else { break };
            let name = &after[..=close];
            // Shell syntax such as `${VAR}` is left alone.
            let is_shell = open > 0 && rest.as_bytes()[open - 1] == b'$';
            let is_ident = name[1..name.len() - 1]
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                && name.len() > 2;
            if is_ident && !is_shell && name != CFG_PATH && name != PLAN_FILE {
                return Err(format!(
                    "command template {template:?}: unknown placeholder {name:?} (known: {CFG_PATH}, {PLAN_FILE})"
                ));
            }
            rest = &after[close + 1..];
        }
        let lexed = lex(template).map_err(|e| format!("command template {template:?}: {e}"))?;
        if let Some(bad) = occurrences(template, &lexed)
            .into_iter()
            .find(|o| o.problem.is_some())
        {
            return Err(format!(
                "command template {template:?}: {} at byte {} {}; a placeholder must be a whole unquoted shell word or the value of a -flag= (live-ci quotes the value itself; use $LIVE_CI_CFG_PATH inside quotes)",
                bad.name,
                bad.range.start,
                bad.problem.unwrap_or_default()
            ));
        }
        Ok(CommandTemplate {
            template: template.to_string(),
        })
    }

    /// As [`CommandTemplate::new`], and the template must run `terraform`,
    /// `terragrunt` or `tofu` with `subcommand` (`plan`, `apply`) as a command of
    /// its own, where live-ci inserts its flags.
    pub fn with_invocation(template: &str, subcommand: &str) -> Result<Self, String> {
        let t = Self::new(template)?;
        let lexed = lex(template).map_err(|e| format!("command template {template:?}: {e}"))?;
        if find_invocation(template, &lexed, subcommand).is_none() {
            return Err(format!(
                "command template {template:?}: no `terraform {subcommand}` or `terragrunt {subcommand}` command in it (live-ci adds its flags to that command)"
            ));
        }
        Ok(t)
    }

    /// The template as configured, placeholders unfilled.
    pub fn as_str(&self) -> &str {
        &self.template
    }

    /// The command stored in an execution record: `{cfg_path}` filled in,
    /// `{plan_file}` left for `terra-run`.
    pub fn for_unit(&self, cfg_path: &crate::path::RepoPath) -> String {
        substitute(&self.template, CFG_PATH, cfg_path.as_str())
    }
}

/// Replaces the safely placed occurrences of `placeholder` with the shell-quoted
/// `value`; others are left as they are (a checked template has none, and a
/// directory named like a placeholder arrives quoted).
fn substitute(command: &str, placeholder: &str, value: &str) -> String {
    let Ok(lexed) = lex(command) else {
        return command.to_string();
    };
    let quoted = shell_quote(value);
    let mut out = String::with_capacity(command.len() + quoted.len());
    let mut last = 0;
    for o in occurrences(command, &lexed) {
        if o.name == placeholder && o.problem.is_none() {
            out.push_str(&command[last..o.range.start]);
            out.push_str(&quoted);
            last = o.range.end;
        }
    }
    out.push_str(&command[last..]);
    out
}

fn has_placeholder(command: &str, placeholder: &str) -> bool {
    lex(command).is_ok_and(|lexed| {
        occurrences(command, &lexed)
            .iter()
            .any(|o| o.name == placeholder && o.problem.is_none())
    })
}

/// The last simple command of `command` that runs terraform/terragrunt/tofu
/// with `subcommand`: the index of its subcommand word's token and of its last
/// token.
fn find_invocation(
    command: &str,
    lexed: &Lexed,
    subcommand: &str,
) -> Option<(Range<usize>, usize)> {
    let mut found = None;
    let mut segment: Vec<&Range<usize>> = Vec::new();
    let mut flush = |segment: &mut Vec<&Range<usize>>| {
        if let Some(hit) = invocation_in(command, segment, subcommand) {
            found = Some(hit);
        }
        segment.clear();
    };
    let mut skip_next_word = false;
    for token in &lexed.tokens {
        match token {
            Token::Op(r) => {
                let op = &command[r.clone()];
                if op.starts_with('<') || op.starts_with('>') || op == "&>" {
                    // A redirection: its target word is no argument. A glued
                    // IO number (`2>&1`) is dropped too.
                    if let Some(prev) = segment.last()
                        && prev.end == r.start
                        && command[(*prev).clone()].bytes().all(|c| c.is_ascii_digit())
                    {
                        segment.pop();
                    }
                    skip_next_word = true;
                } else {
                    flush(&mut segment);
                }
            }
            Token::Word(w) => {
                if skip_next_word {
                    skip_next_word = false;
                } else {
                    segment.push(w);
                }
            }
        }
    }
    flush(&mut segment);
    found
}

fn invocation_in(
    command: &str,
    words: &[&Range<usize>],
    subcommand: &str,
) -> Option<(Range<usize>, usize)> {
    let text = |r: &Range<usize>| &command[r.clone()];
    // Leading `NAME=value` assignments belong to the environment.
    let mut rest = words.iter().skip_while(|w| {
        text(w).split_once('=').is_some_and(|(n, _)| {
            !n.is_empty() && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        })
    });
    let program = rest.next()?;
    let base = text(program).rsplit('/').next().unwrap_or("");
    if !TERRAFORM_PROGRAMS.contains(&base) {
        return None;
    }
    let sub = rest.find(|w| text(w) == subcommand)?;
    let last = words.last()?;
    Some(((*sub).clone(), last.end))
}

/// `command` with `args` inserted right after the `subcommand` word of its
/// terraform/terragrunt invocation, so they reach terraform whatever follows
/// (`| tee plan.log`, `&& echo done`). A command without such an invocation
/// (only possible for one that bypassed [`CommandTemplate::with_invocation`])
/// gets them at its end.
pub fn insert_args(command: &str, subcommand: &str, args: &[String]) -> String {
    let joined = args.join(" ");
    match lex(command)
        .ok()
        .and_then(|lexed| find_invocation(command, &lexed, subcommand))
    {
        Some((sub, _)) => format!("{} {joined}{}", &command[..sub.end], &command[sub.end..]),
        None => format!("{command} {joined}"),
    }
}

/// `command` with `args` appended as the last arguments of its terraform or
/// terragrunt `subcommand` invocation (an apply's plan file).
pub fn append_args(command: &str, subcommand: &str, args: &[String]) -> String {
    let joined = args.join(" ");
    match lex(command)
        .ok()
        .and_then(|lexed| find_invocation(command, &lexed, subcommand))
    {
        Some((_, end)) => format!("{} {joined}{}", &command[..end], &command[end..]),
        None => format!("{command} {joined}"),
    }
}

/// The command `terra-run` runs: the record's command with `{plan_file}`
/// filled in. A command without the placeholder gets it added where Terraform
/// expects it (`-out=` after `plan`, the last argument of `apply`), so what
/// was approved is always what is applied.
pub fn with_plan_file(command: &str, phase: super::Phase, plan_file: &str) -> String {
    if has_placeholder(command, PLAN_FILE) {
        return substitute(command, PLAN_FILE, plan_file);
    }
    let quoted = shell_quote(plan_file);
    match phase {
        super::Phase::Plan => insert_args(command, "plan", &[format!("-out={quoted}")]),
        super::Phase::Apply => append_args(command, "apply", &[quoted]),
    }
}

/// Quotes a word for `sh -c` when it holds anything but safe characters.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::RepoPath;
    use crate::terraform::Phase;

    #[test]
    fn templates_fill_the_unit_and_reject_unknown_placeholders() {
        let t =
            CommandTemplate::new("terragrunt plan --terragrunt-working-dir {cfg_path}").unwrap();
        let unit = RepoPath::new("dev/us-east-1/app").unwrap();
        assert_eq!(
            t.for_unit(&unit),
            "terragrunt plan --terragrunt-working-dir dev/us-east-1/app"
        );
        let err = CommandTemplate::new("terraform plan {cfg_pth}").unwrap_err();
        assert!(err.contains("\"{cfg_pth}\""), "{err}");
        assert!(CommandTemplate::new("  ").is_err());
        // Shell parameter expansion is not a placeholder, and is never filled in.
        let shell = CommandTemplate::new("terraform plan -state=${cfg_path}/x").unwrap();
        assert_eq!(shell.for_unit(&unit), "terraform plan -state=${cfg_path}/x");
        let odd = RepoPath::new("dev/it's here").unwrap();
        assert_eq!(
            t.for_unit(&odd),
            r"terragrunt plan --terragrunt-working-dir 'dev/it'\''s here'"
        );
    }

    #[test]
    fn a_placeholder_that_the_quoting_would_not_protect_is_refused_naming_the_template() {
        for (template, why) in [
            (r#"terraform plan "-chdir={cfg_path}""#, "is inside quotes"),
            ("terraform plan '{cfg_path}'", "is inside quotes"),
            (
                r#"echo "$(ls {cfg_path})" && terraform plan"#,
                "is inside quotes",
            ),
            (
                "terraform plan $(echo {cfg_path})",
                "is inside a command substitution",
            ),
            (
                "terraform plan `echo {plan_file}`",
                "is inside a command substitution",
            ),
            ("terraform plan # {cfg_path}", "is inside a comment"),
            (r"terraform plan \{cfg_path}", "is escaped with a backslash"),
            (
                "terraform plan x{cfg_path}",
                "is glued to other text in the word \"x{cfg_path}\"",
            ),
            ("terraform plan {cfg_path}/sub", "is glued to other text"),
            (
                "terraform plan -var=unit={cfg_path}",
                "is glued to other text",
            ),
            ("terraform plan $HOME{plan_file}", "is glued to other text"),
        ] {
            let err = CommandTemplate::new(template).unwrap_err();
            assert!(
                err.starts_with(&format!("command template {template:?}: ")) && err.contains(why),
                "{template}: {err}"
            );
        }
        // What stays allowed: whole words and -flag= values, outside quotes.
        for ok in [
            "terragrunt plan -input=false -out={plan_file}",
            "terraform -chdir={cfg_path} plan --out={plan_file} | tee plan.log",
            "cd {cfg_path} && terraform plan -out {plan_file} 2>&1",
            "terraform init -backend-config=\"path=$(echo \"$LIVE_CI_CFG_PATH\" | tr / _)\" && terraform plan",
        ] {
            assert!(CommandTemplate::new(ok).is_ok(), "{ok}");
        }
        assert!(
            CommandTemplate::new("terraform plan 'unterminated")
                .unwrap_err()
                .contains("unterminated single quote")
        );
    }

    #[test]
    fn a_hostile_unit_path_stays_one_argument() {
        let t = CommandTemplate::new("terraform -chdir={cfg_path} plan").unwrap();
        let evil = RepoPath::new("dev/$(touch pwned)/x'; rm -rf ~; '").unwrap();
        assert_eq!(
            t.for_unit(&evil),
            r"terraform -chdir='dev/$(touch pwned)/x'\''; rm -rf ~; '\''' plan"
        );
        // A directory named like a placeholder arrives quoted: never filled in again.
        let named = RepoPath::new("dev/{plan_file}").unwrap();
        let cmd = t.for_unit(&named);
        assert_eq!(
            with_plan_file(&cmd, Phase::Plan, "/tmp/p"),
            "terraform -chdir='dev/{plan_file}' plan -out=/tmp/p"
        );
    }

    #[test]
    fn the_plan_file_is_placed_or_inserted_into_the_invocation() {
        assert_eq!(
            with_plan_file(
                "terraform plan -out={plan_file} -no-color",
                Phase::Plan,
                "/tmp/p"
            ),
            "terraform plan -out=/tmp/p -no-color"
        );
        assert_eq!(
            with_plan_file("terraform plan", Phase::Plan, "/tmp/a b"),
            "terraform plan -out='/tmp/a b'"
        );
        assert_eq!(
            with_plan_file("terraform apply -auto-approve", Phase::Apply, "/tmp/p"),
            "terraform apply -auto-approve /tmp/p"
        );
        // Pipelines and lists: the flag goes to terraform, not to `tee` or `echo`.
        assert_eq!(
            with_plan_file(
                "terraform init && terraform plan -no-color | tee plan.log",
                Phase::Plan,
                "/tmp/p"
            ),
            "terraform init && terraform plan -out=/tmp/p -no-color | tee plan.log"
        );
        assert_eq!(
            with_plan_file(
                "TF_IN_AUTOMATION=1 terragrunt apply -auto-approve 2>&1 | tee apply.log; echo done",
                Phase::Apply,
                "/tmp/p"
            ),
            "TF_IN_AUTOMATION=1 terragrunt apply -auto-approve /tmp/p 2>&1 | tee apply.log; echo done"
        );
    }

    #[test]
    fn flags_go_into_the_invocation_not_after_the_pipeline() {
        let args = ["-detailed-exitcode".to_string()];
        assert_eq!(
            insert_args("terraform plan -out=/p | tee log", "plan", &args),
            "terraform plan -detailed-exitcode -out=/p | tee log"
        );
        assert_eq!(
            insert_args(
                "/usr/local/bin/terraform -chdir=dev plan > out.txt && echo ok",
                "plan",
                &args
            ),
            "/usr/local/bin/terraform -chdir=dev plan -detailed-exitcode > out.txt && echo ok"
        );
        // `plan` as another program's argument is not the invocation.
        assert_eq!(
            insert_args("echo plan; terraform plan", "plan", &args),
            "echo plan; terraform plan -detailed-exitcode"
        );
        assert!(CommandTemplate::with_invocation("./plan.sh {plan_file}", "plan").is_err());
        assert!(CommandTemplate::with_invocation("echo terraform plan", "plan").is_err());
        assert!(
            CommandTemplate::with_invocation("terraform init && terraform plan | cat", "plan")
                .is_ok()
        );
        let err = CommandTemplate::with_invocation("terraform plan", "apply").unwrap_err();
        assert_eq!(
            err,
            "command template \"terraform plan\": no `terraform apply` or `terragrunt apply` command in it (live-ci adds its flags to that command)"
        );
    }
}
