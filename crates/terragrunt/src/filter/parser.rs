//! Recursive-descent parser from tokens to a [`Query`], with errors that name
//! the column and what was expected there.
//!
//! Hand-written rather than generated: the grammar is a handful of rules, and
//! hand-written code gives the precise, friendly messages users need when a
//! `--filter` flag is wrong.
//!
//! ```text
//! query     = term { "|" term } EOF
//! term      = "!" term | graph
//! graph     = [ [ DEPTH ] "..." ] [ "^" ] target [ "..." [ DEPTH ] ]
//! target    = NAME | PATH | "{" TEXT "}" | KEY "=" VALUE | "[" REF [ "..." REF ] "]"
//! ```
//!
//! `^` needs at least one `...`; a leading `DEPTH "..."` is recognised only when
//! a target follows it, so `1...` still means "unit 1 and its dependencies".

use std::num::NonZeroUsize;

use globset::GlobBuilder;

use super::ast::{Direction, GraphExpr, Kind, Query, Reach, Target, Term};
use super::lexer::{Token, TokenKind, tokenize};
use crate::error::{EngineError, Result};
use live_ci_core::path::RepoPath;

/// What every term position accepts, for "expected ..." messages.
const TARGET: &str = "a name, path or [git range]";

/// Parses one query.
pub fn parse_query(query: &str) -> Result<Query> {
    let tokens = tokenize(query);
    let mut parser = Parser {
        query,
        tokens,
        pos: 0,
    };
    parser.query()
}

struct Parser<'q> {
    query: &'q str,
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser<'_> {
    fn query(&mut self) -> Result<Query> {
        let mut terms = vec![self.term()?];
        loop {
            match self.peek().kind {
                TokenKind::Pipe => {
                    self.pos += 1;
                    terms.push(self.term()?);
                }
                TokenKind::Eof => return Ok(Query { terms }),
                _ => {
                    let tok = self.peek().clone();
                    return Err(self.error(
                        tok.column,
                        format!(
                            "expected \"|\" or the end of the filter, found {} \
                             (combine expressions with \"|\")",
                            tok.describe()
                        ),
                    ));
                }
            }
        }
    }

    fn term(&mut self) -> Result<Term> {
        if self.peek().kind == TokenKind::Bang {
            self.pos += 1;
            return Ok(Term::Not(Box::new(self.term()?)));
        }
        self.graph()
    }

    fn graph(&mut self) -> Result<Term> {
        let mut dependents = None;
        if let Some(depth) = self.leading_depth()? {
            dependents = Some(Reach::Depth(depth));
            self.pos += 2;
        } else if self.peek().kind == TokenKind::Ellipsis {
            dependents = Some(Reach::All);
            self.pos += 1;
        }
        let caret = (self.peek().kind == TokenKind::Caret).then(|| {
            self.pos += 1;
            self.tokens[self.pos - 1].column
        });
        let target = self.target()?;
        let mut dependencies = None;
        if self.peek().kind == TokenKind::Ellipsis {
            self.pos += 1;
            dependencies = Some(match self.peek().kind.clone() {
                TokenKind::Word(w) if w.bytes().all(|b| b.is_ascii_digit()) => {
                    let column = self.peek().column;
                    self.pos += 1;
                    Reach::Depth(self.depth(&w, column)?)
                }
                _ => Reach::All,
            });
        }
        let direction = match (dependents, dependencies) {
            (None, None) => {
                if let Some(column) = caret {
                    return Err(self.error(
                        column,
                        "\"^\" excludes the target of a graph expression, so it needs \
                         \"...\" before or after the target (e.g. \"...^foo\" or \"^foo...\")",
                    ));
                }
                return Ok(Term::Target(target));
            }
            (Some(d), None) => Direction::Dependents(d),
            (None, Some(d)) => Direction::Dependencies(d),
            (Some(dependents), Some(dependencies)) => Direction::Both {
                dependents,
                dependencies,
            },
        };
        Ok(Term::Graph(GraphExpr {
            target,
            direction,
            exclude_target: caret.is_some(),
        }))
    }

    /// `N...` followed by something a target can start with: a dependents depth.
    fn leading_depth(&self) -> Result<Option<NonZeroUsize>> {
        let TokenKind::Word(w) = &self.peek().kind else {
            return Ok(None);
        };
        if !w.bytes().all(|b| b.is_ascii_digit())
            || self.peek_at(1).kind != TokenKind::Ellipsis
            || !matches!(
                self.peek_at(2).kind,
                TokenKind::Word(_) | TokenKind::LBrace | TokenKind::LBracket | TokenKind::Caret
            )
        {
            return Ok(None);
        }
        self.depth(w, self.peek().column).map(Some)
    }

    fn depth(&self, digits: &str, column: usize) -> Result<NonZeroUsize> {
        let n: usize = digits
            .parse()
            .map_err(|_| self.error(column, format!("depth {digits:?} is too large")))?;
        NonZeroUsize::new(n).ok_or_else(|| {
            self.error(
                column,
                "a depth must be at least 1, found \"0\" (use the target without \"...\")",
            )
        })
    }

    fn target(&mut self) -> Result<Target> {
        let tok = self.peek().clone();
        match tok.kind {
            TokenKind::Word(w) => {
                self.pos += 1;
                if self.peek().kind == TokenKind::Eq {
                    self.pos += 1;
                    return self.attribute(&w, tok.column);
                }
                if w.starts_with("./") || w.starts_with('/') {
                    self.path(&w, tok.column).map(Target::Path)
                } else {
                    self.name(&w, tok.column)
                }
            }
            TokenKind::LBrace => {
                self.pos += 1;
                let TokenKind::Word(w) = self.peek().kind.clone() else {
                    return Err(self.expected("a path", "{"));
                };
                let column = self.peek().column;
                self.pos += 1;
                if self.peek().kind != TokenKind::RBrace {
                    return Err(self.error(
                        self.peek().column,
                        format!(
                            "expected \"}}\" to close the path opened at column {}",
                            tok.column
                        ),
                    ));
                }
                self.pos += 1;
                self.path(&w, column).map(Target::Path)
            }
            TokenKind::LBracket => {
                self.pos += 1;
                let base = self.git_ref("[")?;
                let head = if self.peek().kind == TokenKind::Ellipsis {
                    self.pos += 1;
                    Some(self.git_ref("...")?)
                } else {
                    None
                };
                if self.peek().kind != TokenKind::RBracket {
                    let found = self.peek().clone();
                    let what = if found.kind != TokenKind::Eof {
                        format!(", found {}", found.describe())
                    } else {
                        String::new()
                    };
                    return Err(self.error(
                        found.column,
                        format!(
                            "expected \"]\" to close the git range opened at column {}{what}",
                            tok.column
                        ),
                    ));
                }
                self.pos += 1;
                Ok(Target::Git { base, head })
            }
            _ => {
                let after = self.previous().map(|t| match &t.kind {
                    TokenKind::Word(w) => w.clone(),
                    _ => t.describe().trim_matches('"').to_string(),
                });
                match after {
                    Some(after) => Err(self.expected(TARGET, &after)),
                    None => Err(self.expected_at_start(TARGET)),
                }
            }
        }
    }

    fn attribute(&mut self, key: &str, key_column: usize) -> Result<Target> {
        let TokenKind::Word(value) = self.peek().kind.clone() else {
            return Err(self.expected("a value", "="));
        };
        let column = self.peek().column;
        self.pos += 1;
        match key {
            "name" => self.name(&value, column),
            "type" => match value.as_str() {
                "unit" => Ok(Target::Type(Kind::Unit)),
                "stack" => Ok(Target::Type(Kind::Stack)),
                _ => Err(self.error(
                    column,
                    format!("unknown type {value:?} (expected unit or stack)"),
                )),
            },
            "reading" => {
                // Terragrunt reads `reading=/x` as a filesystem path; only the
                // relative spelling is repository-relative.
                let path = if value.starts_with('/') {
                    self.absolute_path(&value, column)?
                } else {
                    self.path(&value, column)?
                };
                if path.is_empty() {
                    return Err(self.error(column, "expected a file after \"reading=\""));
                }
                Ok(Target::Reading(path))
            }
            _ => Err(self.error(
                key_column,
                format!("unknown attribute {key:?} (expected name, type or reading)"),
            )),
        }
    }

    fn name(&self, word: &str, column: usize) -> Result<Target> {
        if word.contains('/') {
            return Err(self.error(
                column,
                format!(
                    "{word:?} is not a name (names cannot contain \"/\"); \
                     write a path as \"./{}\"",
                    word.trim_start_matches("./")
                ),
            ));
        }
        if word == "." || word == ".." {
            return Err(self.error(
                column,
                format!("{word:?} is not a name; the repository root is \"./\""),
            ));
        }
        self.check_glob(word, column)?;
        Ok(Target::Name(word.to_string()))
    }

    /// Normalizes a path glob to repo-relative form (`./a`, `/a` and `a` all mean
    /// `a`) and checks that it compiles.
    fn path(&self, word: &str, column: usize) -> Result<String> {
        let rel = word.trim_start_matches('/');
        let normalized = RepoPath::new(rel).map_err(|_| {
            self.error(
                column,
                format!("path {word:?} climbs above the repository root"),
            )
        })?;
        let normalized = normalized.as_str().to_string();
        self.check_glob(&normalized, column)?;
        Ok(normalized)
    }

    /// An absolute filesystem glob, normalized lexically (`.` and `..` resolved)
    /// with its leading `/` kept.
    fn absolute_path(&self, word: &str, column: usize) -> Result<String> {
        let normalized = RepoPath::new(word.trim_start_matches('/'))
            .map_err(|_| self.error(column, format!("path {word:?} climbs above the root")))?;
        let normalized = format!("/{}", normalized.as_str());
        self.check_glob(&normalized, column)?;
        Ok(normalized)
    }

    fn check_glob(&self, pattern: &str, column: usize) -> Result<()> {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map(drop)
            .map_err(|e| self.error(column, format!("invalid glob {pattern:?}: {}", e.kind())))
    }

    fn git_ref(&mut self, after: &str) -> Result<String> {
        let TokenKind::Word(r) = self.peek().kind.clone() else {
            return Err(self.expected("a git reference", after));
        };
        let column = self.peek().column;
        self.pos += 1;
        let problem = if r.starts_with('-') {
            Some("cannot start with \"-\"")
        } else if r.contains(char::is_whitespace) {
            Some("cannot contain whitespace")
        } else if r.contains("..") {
            Some("cannot contain \"..\" (write a range as [a...b])")
        } else if r.ends_with('.') {
            // `[a....b]` would split as `a` / `.b`; git forbids the trailing dot anyway.
            Some("cannot end with \".\"")
        } else if r.contains(char::is_control) {
            Some("cannot contain control characters")
        } else {
            None
        };
        match problem {
            Some(p) => Err(self.error(column, format!("git reference {r:?} {p}"))),
            None => Ok(r),
        }
    }

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.pos + ahead).min(last)]
    }

    fn previous(&self) -> Option<&Token> {
        self.pos.checked_sub(1).map(|i| &self.tokens[i])
    }

    /// "expected X after "Y"", naming what was found unless it is the end.
    fn expected(&self, what: &str, after: &str) -> EngineError {
        let found = self.peek();
        let mut message = format!("expected {what} after {after:?}");
        if found.kind != TokenKind::Eof {
            message.push_str(&format!(", found {}", found.describe()));
        }
        self.error(found.column, message)
    }

    fn expected_at_start(&self, what: &str) -> EngineError {
        let found = self.peek();
        let message = if found.kind == TokenKind::Eof {
            format!("expected {what}, found an empty filter")
        } else {
            format!("expected {what}, found {}", found.describe())
        };
        self.error(found.column, message)
    }

    fn error(&self, column: usize, message: impl Into<String>) -> EngineError {
        EngineError::FilterSyntax {
            query: self.query.to_string(),
            column,
            message: message.into(),
        }
    }
}
