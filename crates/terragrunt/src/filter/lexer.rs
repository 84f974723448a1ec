//! Splits a filter query into tokens, each with its 1-based column.
//!
//! Hand-written, like the parser: the language has nine punctuation tokens and
//! one kind of word, which a parser generator would only obscure.
//!
//! Words follow terragrunt: anything up to a special character (`! | = { } [ ]
//! ^`) or an ellipsis, so names and paths may hold spaces (`my app`), and
//! surrounding whitespace is trimmed. Braces and brackets switch modes: a braced
//! path is raw text up to `}`, a git range is raw text split only by `...` and
//! closed by `]` (refs such as `HEAD^1` or `main@{1}` contain special characters).
//! The lexer never fails; every malformed query is the parser's to report.

use super::ast::SPECIAL;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A name, path, attribute key or value, depth, or git reference.
    Word(String),
    Bang,
    Pipe,
    Eq,
    Caret,
    Ellipsis,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Eof,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    /// 1-based character (not byte) column of the token's first character.
    pub column: usize,
}

impl Token {
    /// The token as users typed it, for error messages.
    pub(super) fn describe(&self) -> String {
        match &self.kind {
            TokenKind::Word(w) => format!("{w:?}"),
            TokenKind::Eof => "the end of the filter".to_string(),
            other => format!("\"{}\"", punctuation(other)),
        }
    }
}

fn punctuation(kind: &TokenKind) -> &'static str {
    match kind {
        TokenKind::Bang => "!",
        TokenKind::Pipe => "|",
        TokenKind::Eq => "=",
        TokenKind::Caret => "^",
        TokenKind::Ellipsis => "...",
        TokenKind::LBrace => "{",
        TokenKind::RBrace => "}",
        TokenKind::LBracket => "[",
        TokenKind::RBracket => "]",
        TokenKind::Word(_) | TokenKind::Eof => "",
    }
}

/// Tokenizes `query`; the last token is always [`TokenKind::Eof`].
pub(crate) fn tokenize(query: &str) -> Vec<Token> {
    let chars: Vec<char> = query.chars().collect();
    let mut lexer = Lexer {
        chars: &chars,
        pos: 0,
        tokens: Vec::new(),
    };
    lexer.run();
    lexer.tokens
}

struct Lexer<'a> {
    chars: &'a [char],
    /// Index into `chars`; the column is `pos + 1`.
    pos: usize,
    tokens: Vec<Token>,
}

impl Lexer<'_> {
    fn run(&mut self) {
        loop {
            self.skip_whitespace();
            let Some(&c) = self.chars.get(self.pos) else {
                self.push(TokenKind::Eof, self.pos);
                return;
            };
            let start = self.pos;
            let single = match c {
                '!' => Some(TokenKind::Bang),
                '|' => Some(TokenKind::Pipe),
                '=' => Some(TokenKind::Eq),
                '^' => Some(TokenKind::Caret),
                '}' => Some(TokenKind::RBrace),
                ']' => Some(TokenKind::RBracket),
                _ => None,
            };
            if let Some(kind) = single {
                self.pos += 1;
                self.push(kind, start);
            } else if self.at_ellipsis() {
                self.pos += 3;
                self.push(TokenKind::Ellipsis, start);
            } else if c == '{' {
                self.pos += 1;
                self.push(TokenKind::LBrace, start);
                self.braced_path();
            } else if c == '[' {
                self.pos += 1;
                self.push(TokenKind::LBracket, start);
                self.git_range();
            } else {
                let end = self.scan(|lx| {
                    lx.chars
                        .get(lx.pos)
                        .is_none_or(|c| SPECIAL.contains(c) || lx.at_ellipsis())
                });
                self.push_word(start, end);
            }
        }
    }

    /// Everything up to `}` is the path, specials included.
    fn braced_path(&mut self) {
        self.skip_whitespace();
        let start = self.pos;
        let end = self.scan(|lx| lx.chars.get(lx.pos).is_none_or(|&c| c == '}'));
        if start < end {
            self.push_word(start, end);
        }
        if self.chars.get(self.pos) == Some(&'}') {
            self.push(TokenKind::RBrace, self.pos);
            self.pos += 1;
        }
    }

    /// `[ref]` or `[ref...ref]`: refs are raw text, split by `...`, up to `]`.
    /// Empty refs produce no word, so the parser sees e.g. `[` then `...` and
    /// reports the missing reference at the right column.
    fn git_range(&mut self) {
        loop {
            self.skip_whitespace();
            let start = self.pos;
            let end = self.scan(|lx| {
                lx.chars
                    .get(lx.pos)
                    .is_none_or(|&c| c == ']' || lx.at_ellipsis())
            });
            if start < end {
                self.push_word(start, end);
            }
            match self.chars.get(self.pos) {
                Some(']') => {
                    self.push(TokenKind::RBracket, self.pos);
                    self.pos += 1;
                    return;
                }
                Some(_) => {
                    self.push(TokenKind::Ellipsis, self.pos);
                    self.pos += 3;
                }
                None => return,
            }
        }
    }

    /// Advances until `stop` holds; returns the end of the word with trailing
    /// whitespace trimmed (leading whitespace was skipped by the caller).
    fn scan(&mut self, stop: impl Fn(&Self) -> bool) -> usize {
        while !stop(self) {
            self.pos += 1;
        }
        let mut end = self.pos;
        while end > 0 && self.chars[end - 1].is_whitespace() {
            end -= 1;
        }
        end
    }

    fn at_ellipsis(&self) -> bool {
        self.chars.get(self.pos..self.pos + 3) == Some(&['.', '.', '.'])
    }

    fn skip_whitespace(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn push_word(&mut self, start: usize, end: usize) {
        let word: String = self.chars[start..end].iter().collect();
        self.push(TokenKind::Word(word), start);
    }

    fn push(&mut self, kind: TokenKind, index: usize) {
        self.tokens.push(Token {
            kind,
            column: index + 1,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(q: &str) -> Vec<(TokenKind, usize)> {
        tokenize(q)
            .into_iter()
            .map(|t| (t.kind, t.column))
            .collect()
    }

    fn w(s: &str) -> TokenKind {
        TokenKind::Word(s.to_string())
    }

    #[test]
    fn words_keep_inner_spaces_and_stop_at_specials_and_ellipsis() {
        use TokenKind::*;
        assert_eq!(
            kinds("  my app ...| ./a b/*!x"),
            [
                (w("my app"), 3),
                (Ellipsis, 10),
                (Pipe, 13),
                (w("./a b/*"), 15),
                (Bang, 22),
                (w("x"), 23),
                (Eof, 24),
            ]
        );
        assert_eq!(
            kinds("2...^a.b...1"),
            [
                (w("2"), 1),
                (Ellipsis, 2),
                (Caret, 5),
                (w("a.b"), 6),
                (Ellipsis, 9),
                (w("1"), 12),
                (Eof, 13),
            ]
        );
        // The first three dots of a run are the ellipsis.
        assert_eq!(kinds("....x")[..2], [(Ellipsis, 1), (w(".x"), 4)]);
    }

    #[test]
    fn braces_and_brackets_take_raw_text() {
        use TokenKind::*;
        assert_eq!(
            kinds("{ a|b [c] }..."),
            [
                (LBrace, 1),
                (w("a|b [c]"), 3),
                (RBrace, 11),
                (Ellipsis, 12),
                (Eof, 15)
            ]
        );
        assert_eq!(
            kinds("[HEAD^1 ... main@{1}]x"),
            [
                (LBracket, 1),
                (w("HEAD^1"), 2),
                (Ellipsis, 9),
                (w("main@{1}"), 13),
                (RBracket, 21),
                (w("x"), 22),
                (Eof, 23),
            ]
        );
        assert_eq!(
            kinds("[...]")[1..],
            [(Ellipsis, 2), (RBracket, 5), (Eof, 6)]
        );
        assert_eq!(kinds("{ab")[1..], [(w("ab"), 2), (Eof, 4)]);
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let toks = tokenize("é|ü");
        assert_eq!(toks[1].column, 2);
        assert_eq!(toks[2].column, 3);
        assert_eq!(toks[3].column, 4);
    }
}
