//! The syntax tree of one filter query, and its canonical spelling.
//!
//! The tree's shape mirrors the grammar's precedence: a [`Query`] is an
//! intersection (`|`) of [`Term`]s, a term is a negation or a (possibly graph-
//! expanded) [`Target`]. There are no parentheses in the language, so `!` can
//! never apply to a whole intersection and the types make that unrepresentable.

use std::fmt;
use std::num::NonZeroUsize;

/// A whole query: the units matched by every term (`a | b | c`). Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The `|`-separated terms, in query order.
    pub terms: Vec<Term>,
}

/// One operand of `|`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// `!term`: every unit the inner term does not match.
    Not(Box<Term>),
    /// A target with no graph operator.
    Target(Target),
    /// A target widened along the dependency graph (`...t`, `t...`, `^t...`).
    Graph(GraphExpr),
}

/// `[depth]...[^]target...[depth]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphExpr {
    /// The units the walk starts from.
    pub target: Target,
    /// Which way, and how far, the walk goes.
    pub direction: Direction,
    /// `^`: drop the units the target itself matched, keep only what the
    /// traversal added.
    pub exclude_target: bool,
}

/// Which way a graph expression walks. At least one direction is always set;
/// a target without one is a [`Term::Target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `target...`: the units it depends on.
    Dependencies(Reach),
    /// `...target`: the units that depend on it.
    Dependents(Reach),
    /// `...target...`.
    Both {
        /// How far the walk goes towards dependents.
        dependents: Reach,
        /// How far the walk goes towards dependencies.
        dependencies: Reach,
    },
}

impl Direction {
    /// How far the walk goes towards dependents; `None` when it does not.
    pub fn dependents(&self) -> Option<Reach> {
        match *self {
            Direction::Dependents(r) | Direction::Both { dependents: r, .. } => Some(r),
            Direction::Dependencies(_) => None,
        }
    }

    /// How far the walk goes towards dependencies; `None` when it does not.
    pub fn dependencies(&self) -> Option<Reach> {
        match *self {
            Direction::Dependencies(r)
            | Direction::Both {
                dependencies: r, ..
            } => Some(r),
            Direction::Dependents(_) => None,
        }
    }
}

/// How far a graph traversal goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The whole transitive closure (`...`).
    All,
    /// At most this many edges away (`...2`, `2...`).
    Depth(NonZeroUsize),
}

impl Reach {
    /// The depth limit (steps from the target); `None` for no limit.
    pub fn depth(self) -> Option<usize> {
        match self {
            Reach::All => None,
            Reach::Depth(d) => Some(d.get()),
        }
    }
}

/// What a term matches before any graph expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `foo`, `name=foo`, `app*`: a glob over the unit's directory name.
    Name(String),
    /// `./a/*`, `/a/**/b`, `{a b}`: a glob over the unit's repo-relative path,
    /// stored normalized (no leading `./` or `/`, root = "").
    Path(String),
    /// `type=unit` / `type=stack`.
    Type(Kind),
    /// `reading=common/*.hcl`: units that read a file matching the glob
    /// (stored normalized like [`Target::Path`]); `reading=/abs/*.hcl` is a
    /// filesystem path, stored with its leading `/`.
    Reading(String),
    /// `[base]` (base against the working tree) or `[base...head]`.
    Git {
        /// The base revision, as written.
        base: String,
        /// The head revision, as written; `None`: the working tree.
        head: Option<String>,
    },
}

/// What kind of component a `type=` filter selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A unit (a directory with a `terragrunt.hcl`).
    Unit,
    /// A stack (a directory with a `terragrunt.stack.hcl`).
    Stack,
}

impl Kind {
    /// The kind as a query writes it (`unit`, `stack`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Unit => "unit",
            Kind::Stack => "stack",
        }
    }
}

/// Characters that end a bare word; see the lexer.
pub(crate) const SPECIAL: &[char] = &['!', '|', '=', '{', '}', '[', ']', '^'];

impl Query {
    /// True when any term needs git (`[...]`).
    pub fn needs_git(&self) -> bool {
        self.terms.iter().any(Term::needs_git)
    }

    /// A negative query (`!foo`) removes units from the selection; every other
    /// query adds them. `!a | b` is positive: it selects the `b`s that are not `a`.
    pub fn is_negative(&self) -> bool {
        matches!(self.terms.as_slice(), [Term::Not(_)])
    }
}

impl Term {
    /// True when the term needs git (`[...]`).
    pub fn needs_git(&self) -> bool {
        match self {
            Term::Not(t) => t.needs_git(),
            Term::Target(t) => t.needs_git(),
            Term::Graph(g) => g.target.needs_git(),
        }
    }
}

impl Target {
    /// True when the target is a git range (`[...]`).
    pub fn needs_git(&self) -> bool {
        matches!(self, Target::Git { .. })
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Not(t) => write!(f, "!{t}"),
            Term::Target(t) => write!(f, "{t}"),
            Term::Graph(g) => write!(f, "{g}"),
        }
    }
}

impl fmt::Display for GraphExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(reach) = self.direction.dependents() {
            if let Reach::Depth(d) = reach {
                write!(f, "{d}")?;
            }
            f.write_str("...")?;
        }
        if self.exclude_target {
            f.write_str("^")?;
        }
        let target = self.target.to_string();
        f.write_str(&target)?;
        if let Some(reach) = self.direction.dependencies() {
            // `a.` followed by `...` would lex as `a` + `...` + `.`; a space keeps the
            // dot in the word (words are trimmed).
            if target.ends_with('.') {
                f.write_str(" ")?;
            }
            f.write_str("...")?;
            if let Reach::Depth(d) = reach {
                write!(f, "{d}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // An all-digit name could be read back as a depth (`2...x`), so it
            // is spelled as an attribute.
            Target::Name(n) if n.bytes().all(|b| b.is_ascii_digit()) => write!(f, "name={n}"),
            Target::Name(n) => f.write_str(n),
            Target::Path(p) => {
                let spelled = spell_path(p);
                if fits_bare_word(&spelled) {
                    f.write_str(&spelled)
                } else {
                    write!(f, "{{{spelled}}}")
                }
            }
            Target::Type(k) => write!(f, "type={}", k.as_str()),
            Target::Reading(p) if p.starts_with('/') => write!(f, "reading={p}"),
            Target::Reading(p) => {
                let spelled = spell_path(p);
                write!(
                    f,
                    "reading={}",
                    spelled.strip_prefix("./").unwrap_or(&spelled)
                )
            }
            Target::Git { base, head: None } => write!(f, "[{base}]"),
            Target::Git {
                base,
                head: Some(head),
            } => write!(f, "[{base}...{head}]"),
        }
    }
}

/// `./` + the normalized path, with a trailing `/` when the last component ends
/// in whitespace, which the lexer would otherwise trim away.
fn spell_path(p: &str) -> String {
    let mut s = format!("./{p}");
    if s.ends_with(char::is_whitespace) {
        s.push('/');
    }
    s
}

/// Whether the lexer reads `s` back as one word, unchanged.
fn fits_bare_word(s: &str) -> bool {
    !s.contains(SPECIAL) && !s.contains("...")
}
