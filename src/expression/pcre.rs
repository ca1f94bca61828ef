//! MongoDB regular expressions (PCRE syntax and flags) compiled onto the `regex` crate: the
//! translation of the constructs whose meaning differs, and precise errors for the ones the
//! crate cannot express (backreferences, lookaround, atomic groups, recursion).

use crate::error::{MongoError, Result};
use regex::{Regex, RegexBuilder};
use std::ops::Range;

/// A compiled MongoDB regular expression, keeping its source for equality and display.
#[derive(Clone, Debug)]
pub struct MongoRegex {
    pub pattern: String,
    pub options: String,
    compiled: Regex,
}

impl MongoRegex {
    pub fn new(pattern: &str, options: &str) -> Result<MongoRegex> {
        if pattern.contains('\0') {
            return Err(MongoError::location(
                51091,
                "Regular expression cannot contain an embedded null byte",
            ));
        }
        if options.contains('\0') {
            return Err(MongoError::location(
                51092,
                "Regular expression options string cannot contain an embedded null byte",
            ));
        }
        let mut builder_flags = Flags::default();
        for c in options.chars() {
            match c {
                'i' => builder_flags.case_insensitive = true,
                'm' => builder_flags.multi_line = true,
                's' => builder_flags.dot_all = true,
                'x' => builder_flags.extended = true,
                // PCRE's UTF-8 mode is always on; 'u' changes nothing.
                'u' => {}
                other => {
                    return Err(MongoError::location(
                        51108,
                        format!("invalid flag in regex options: {other}"),
                    ));
                }
            }
        }
        let translated = translate(pattern, builder_flags)?;
        let compiled = RegexBuilder::new(&translated)
            .case_insensitive(builder_flags.case_insensitive)
            .multi_line(builder_flags.multi_line)
            .dot_matches_new_line(builder_flags.dot_all)
            .ignore_whitespace(builder_flags.extended)
            .size_limit(32 << 20)
            .build()
            .map_err(|e| {
                let text = match e {
                    regex::Error::Syntax(s) => s
                        .lines()
                        .last()
                        .unwrap_or("syntax error")
                        .trim()
                        .to_string(),
                    regex::Error::CompiledTooBig(_) => {
                        "regular expression is too large".to_string()
                    }
                    _ => "invalid regular expression".to_string(),
                };
                MongoError::location(51091, format!("Regular expression is invalid: {text}"))
            })?;
        Ok(MongoRegex {
            pattern: pattern.to_string(),
            options: options.to_string(),
            compiled,
        })
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.is_match(text)
    }

    /// The first match that starts at or after byte `start` of `text`. Anchors and word
    /// boundaries still see the text before `start`, as with PCRE's start offset.
    pub fn find_at(&self, text: &str, start: usize) -> Option<RegexMatch> {
        let captures = self.compiled.captures_at(text, start)?;
        let whole = captures.get(0)?.range();
        let groups = (1..captures.len())
            .map(|i| captures.get(i).map(|group| group.range()))
            .collect();
        Some(RegexMatch { whole, groups })
    }
}

/// Where a match lies in the text, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexMatch {
    pub whole: Range<usize>,
    /// Each capture group in pattern order; `None` when the group took no part in the match.
    pub groups: Vec<Option<Range<usize>>>,
}

#[derive(Clone, Copy, Default)]
struct Flags {
    case_insensitive: bool,
    multi_line: bool,
    dot_all: bool,
    extended: bool,
}

fn unsupported(what: &str) -> MongoError {
    MongoError::bad_value(format!(
        "Regular expression is not supported: {what} cannot be evaluated by this server"
    ))
}

/// Rewrites a PCRE pattern into the `regex` crate's dialect.
fn translate(pattern: &str, flags: Flags) -> Result<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // Position in `out` where the current class started (to know whether `]` is literal).
    let mut class_start_len = 0usize;
    let mut multi_line = flags.multi_line;
    let extended = flags.extended;
    while i < chars.len() {
        let c = chars[i];
        if in_class {
            match c {
                '\\' => {
                    i += 1;
                    let Some(&e) = chars.get(i) else {
                        return Err(MongoError::location(
                            51091,
                            "Regular expression is invalid: \\ at end of pattern",
                        ));
                    };
                    i = translate_escape(&chars, i, e, true, &mut out)?;
                    continue;
                }
                ']' if out.len() > class_start_len => {
                    in_class = false;
                    out.push(']');
                }
                '[' => {
                    if chars.get(i + 1) == Some(&':') {
                        // POSIX class like [:alpha:]; copy through to the closing ":]".
                        if let Some(end) = find_seq(&chars, i + 2, &[':', ']']) {
                            out.extend(&chars[i..end + 2]);
                            i = end + 2;
                            continue;
                        }
                    }
                    out.push_str("\\[");
                }
                '&' | '~' | '-' if chars.get(i + 1) == Some(&c) => {
                    // Rust treats `&&`, `~~` and `--` inside classes as set operators.
                    out.push('\\');
                    out.push(c);
                }
                c if extended && (c.is_whitespace() || c == '#') => {
                    // PCRE keeps these literal inside classes even in extended mode.
                    out.push_str(&format!("\\x{{{:X}}}", c as u32));
                }
                _ => out.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '\\' => {
                i += 1;
                let Some(&e) = chars.get(i) else {
                    return Err(MongoError::location(
                        51091,
                        "Regular expression is invalid: \\ at end of pattern",
                    ));
                };
                i = translate_escape(&chars, i, e, false, &mut out)?;
                continue;
            }
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class_start_len = out.len();
                // A leading `]` is a literal in both dialects, but escape it to be explicit.
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                continue;
            }
            '$' => {
                // PCRE's `$` also matches before a final newline.
                if multi_line {
                    out.push('$');
                } else {
                    out.push_str("(?:\\n?\\z)");
                }
            }
            '(' => {
                if chars.get(i + 1) == Some(&'*') {
                    return Err(unsupported("a backtracking control verb"));
                }
                if chars.get(i + 1) == Some(&'?') {
                    let rest: String = chars[i + 2..chars.len().min(i + 6)].iter().collect();
                    if rest.starts_with('=')
                        || rest.starts_with('!')
                        || rest.starts_with("<=")
                        || rest.starts_with("<!")
                    {
                        return Err(unsupported("a lookaround assertion"));
                    }
                    if rest.starts_with('>') {
                        return Err(unsupported("an atomic group"));
                    }
                    if rest.starts_with('#') {
                        // Comment group: drop it.
                        match chars[i..].iter().position(|&c| c == ')') {
                            Some(off) => {
                                i += off + 1;
                                continue;
                            }
                            None => {
                                return Err(MongoError::location(
                                    51091,
                                    "Regular expression is invalid: missing ) after (?# comment",
                                ));
                            }
                        }
                    }
                    if rest.starts_with('(') {
                        return Err(unsupported("a conditional group"));
                    }
                    if rest.starts_with('R')
                        || rest.starts_with('&')
                        || rest.starts_with("P>")
                        || rest.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-')
                            && rest
                                .chars()
                                .nth(1)
                                .is_some_and(|c| c.is_ascii_digit() || c == ')')
                    {
                        return Err(unsupported("a recursive pattern reference"));
                    }
                    if rest.starts_with("P=") {
                        return Err(unsupported("a backreference"));
                    }
                    if rest.starts_with('|') {
                        return Err(unsupported("a branch reset group"));
                    }
                    if let Some(name_rest) = rest.strip_prefix('\'') {
                        let _ = name_rest;
                        // (?'name'...) → (?P<name>...)
                        let start = i + 3;
                        if let Some(end) = chars[start..].iter().position(|&c| c == '\'') {
                            out.push_str("(?P<");
                            out.extend(&chars[start..start + end]);
                            out.push('>');
                            i = start + end + 1;
                            continue;
                        }
                    }
                    // Inline flags: track `m` so `$` keeps PCRE's meaning.
                    let mut j = i + 2;
                    let mut on = true;
                    let mut flag_text = String::new();
                    while let Some(&f) = chars.get(j) {
                        match f {
                            '-' => on = false,
                            'i' | 's' | 'x' | 'U' => {}
                            'm' => {
                                if chars.get(j..).is_some_and(|r| r.contains(&')')) {
                                    flag_text.push(if on { '+' } else { '-' });
                                }
                            }
                            'J' | 'X' => {
                                return Err(unsupported(&format!("the inline flag ({f})")));
                            }
                            _ => break,
                        }
                        j += 1;
                    }
                    if chars.get(j) == Some(&')') && !flag_text.is_empty() {
                        multi_line = flag_text.ends_with('+');
                    }
                }
                out.push('(');
            }
            '{' => {
                if let Some(end) = quantifier_end(&chars, i) {
                    out.extend(&chars[i..=end]);
                    i = end + 1;
                    i = skip_possessive(&chars, i)?;
                    continue;
                }
                out.push_str("\\{");
            }
            '}' => out.push_str("\\}"),
            '*' | '+' | '?' => {
                out.push(c);
                i += 1;
                if c != '?' || !matches!(out.chars().rev().nth(1), Some('(')) {
                    i = skip_possessive(&chars, i)?;
                }
                continue;
            }
            '#' if extended => {
                // Comment to end of line in extended mode: copy verbatim (Rust skips it too).
                while i < chars.len() && chars[i] != '\n' {
                    out.push(chars[i]);
                    i += 1;
                }
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err(MongoError::location(
            51091,
            "Regular expression is invalid: missing terminating ] for character class",
        ));
    }
    Ok(out)
}

/// A `+` right after a quantifier makes it possessive in PCRE; the crate has no equivalent.
fn skip_possessive(chars: &[char], i: usize) -> Result<usize> {
    if chars.get(i) == Some(&'+') {
        return Err(unsupported("a possessive quantifier"));
    }
    Ok(i)
}

fn find_seq(chars: &[char], from: usize, seq: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&k| chars[k..].starts_with(seq))
}

/// The index of the closing `}` when `{` at `i` starts a valid quantifier (`{n}`, `{n,}`, `{n,m}`).
fn quantifier_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let digits_start = j;
    while chars.get(j).is_some_and(|c| c.is_ascii_digit()) {
        j += 1;
    }
    if j == digits_start {
        return None;
    }
    if chars.get(j) == Some(&'}') {
        return Some(j);
    }
    if chars.get(j) != Some(&',') {
        return None;
    }
    j += 1;
    while chars.get(j).is_some_and(|c| c.is_ascii_digit()) {
        j += 1;
    }
    (chars.get(j) == Some(&'}')).then_some(j)
}

/// Translates the escape whose character is at `i` (after the backslash); returns the next index.
fn translate_escape(
    chars: &[char],
    i: usize,
    e: char,
    in_class: bool,
    out: &mut String,
) -> Result<usize> {
    let mut next = i + 1;
    match e {
        // PCRE's classes are ASCII-only without UCP; the crate's are Unicode.
        'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
        'D' => out.push_str("[^0-9]"),
        'w' => out.push_str(if in_class {
            "0-9A-Za-z_"
        } else {
            "[0-9A-Za-z_]"
        }),
        'W' => out.push_str("[^0-9A-Za-z_]"),
        's' => out.push_str(if in_class {
            "\\t\\n\\x0B\\x0C\\r "
        } else {
            "[\\t\\n\\x0B\\x0C\\r ]"
        }),
        'S' => out.push_str("[^\\t\\n\\x0B\\x0C\\r ]"),
        'h' => out.push_str(if in_class {
            HSPACE
        } else {
            "[\\t \\xA0\\x{1680}\\x{180E}\\x{2000}-\\x{200A}\\x{202F}\\x{205F}\\x{3000}]"
        }),
        'H' => out.push_str(
            "[^\\t \\xA0\\x{1680}\\x{180E}\\x{2000}-\\x{200A}\\x{202F}\\x{205F}\\x{3000}]",
        ),
        'v' => out.push_str(if in_class {
            VSPACE
        } else {
            "[\\n\\x0B\\x0C\\r\\x{85}\\x{2028}\\x{2029}]"
        }),
        'V' => out.push_str("[^\\n\\x0B\\x0C\\r\\x{85}\\x{2028}\\x{2029}]"),
        'R' if !in_class => out.push_str("(?:\\r\\n|[\\n\\x0B\\x0C\\r\\x{85}\\x{2028}\\x{2029}])"),
        'b' if in_class => out.push_str("\\x08"),
        'b' => out.push_str("(?-u:\\b)"),
        'B' if !in_class => out.push_str("(?-u:\\B)"),
        'A' if !in_class => out.push_str("\\A"),
        'z' if !in_class => out.push_str("\\z"),
        'Z' if !in_class => out.push_str("(?:\\n?\\z)"),
        'G' | 'K' | 'X' | 'C' if !in_class => return Err(unsupported(&format!("\\{e}"))),
        'g' | 'k' => return Err(unsupported("a backreference")),
        '1'..='9' if !in_class => {
            // PCRE reads \1-\9 (and larger numbers when groups exist) as backreferences.
            return Err(unsupported("a backreference"));
        }
        '0'..='7' => {
            // Octal escape: \0, \012, and in classes \1-\7.
            let mut value = 0u32;
            let mut j = i;
            while j < chars.len() && j < i + 3 && ('0'..='7').contains(&chars[j]) {
                value = value * 8 + chars[j].to_digit(8).unwrap_or(0);
                j += 1;
            }
            next = j;
            push_code_point(out, value)?;
        }
        'o' if chars.get(i + 1) == Some(&'{') => {
            let end = chars[i + 2..]
                .iter()
                .position(|&c| c == '}')
                .ok_or_else(|| unsupported("an unterminated \\o{"))?;
            let digits: String = chars[i + 2..i + 2 + end].iter().collect();
            let value = u32::from_str_radix(&digits, 8)
                .map_err(|_| unsupported("a malformed \\o{} escape"))?;
            push_code_point(out, value)?;
            next = i + 3 + end;
        }
        'e' => out.push_str("\\x1B"),
        'a' => out.push_str("\\x07"),
        'c' => {
            let Some(&ctl) = chars.get(i + 1) else {
                return Err(MongoError::location(
                    51091,
                    "Regular expression is invalid: \\c at end of pattern",
                ));
            };
            push_code_point(out, (ctl.to_ascii_uppercase() as u32) ^ 0x40)?;
            next = i + 2;
        }
        'Q' => {
            // Literal text up to \E.
            let mut j = i + 1;
            let mut literal = String::new();
            while j < chars.len() {
                if chars[j] == '\\' && chars.get(j + 1) == Some(&'E') {
                    j += 2;
                    break;
                }
                literal.push(chars[j]);
                j += 1;
            }
            for ch in literal.chars() {
                push_literal(out, ch, in_class);
            }
            next = j;
        }
        'E' => {}
        'x' | 'p' | 'P' if chars.get(i + 1) == Some(&'{') => {
            let end = chars[i + 1..]
                .iter()
                .position(|&c| c == '}')
                .ok_or_else(|| {
                    MongoError::location(
                        51091,
                        format!("Regular expression is invalid: missing }} after \\{e}{{"),
                    )
                })?;
            out.push('\\');
            out.extend(&chars[i..=i + 1 + end]);
            next = i + 2 + end;
        }
        'x' => {
            // \xhh; PCRE allows fewer than two hex digits.
            {
                let mut j = i + 1;
                let mut value = 0u32;
                while j < chars.len() && j < i + 3 && chars[j].is_ascii_hexdigit() {
                    value = value * 16 + chars[j].to_digit(16).unwrap_or(0);
                    j += 1;
                }
                push_code_point(out, value)?;
                next = j;
            }
        }
        'n' | 'r' | 't' | 'f' | 'p' | 'P' => {
            out.push('\\');
            out.push(e);
        }
        c if c.is_ascii_alphanumeric() => {
            return Err(MongoError::location(
                51091,
                format!("Regular expression is invalid: unrecognized character follows \\ (\\{c})"),
            ));
        }
        c => push_literal(out, c, in_class),
    }
    Ok(next)
}

const HSPACE: &str = "\\t \\xA0\\x{1680}\\x{180E}\\x{2000}-\\x{200A}\\x{202F}\\x{205F}\\x{3000}";
const VSPACE: &str = "\\n\\x0B\\x0C\\r\\x{85}\\x{2028}\\x{2029}";

fn push_code_point(out: &mut String, value: u32) -> Result<()> {
    if char::from_u32(value).is_none() {
        return Err(MongoError::location(
            51091,
            "Regular expression is invalid: character code point value is too large",
        ));
    }
    out.push_str(&format!("\\x{{{value:X}}}"));
    Ok(())
}

fn push_literal(out: &mut String, c: char, in_class: bool) {
    if c.is_ascii_alphanumeric() || (!c.is_ascii() && !c.is_whitespace()) {
        out.push(c);
    } else if c.is_ascii_punctuation() || c == ' ' || (in_class && c == '#') {
        out.push('\\');
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:X}}}", c as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, o: &str, t: &str) -> bool {
        MongoRegex::new(p, o).unwrap().is_match(t)
    }

    #[test]
    fn pcre_anchors_and_classes() {
        assert!(m("^abc$", "", "abc"));
        assert!(m("^abc$", "", "abc\n"));
        assert!(!m("^abc$", "", "abc\nx"));
        assert!(m("^b$", "m", "a\nb\nc"));
        assert!(m("\\d+", "", "x12"));
        assert!(!m("^\\d$", "", "٣"));
        assert!(m("[\\d.]+", "", "1.5"));
        assert!(m("a\\/b", "", "a/b"));
        assert!(m("a{", "", "a{"));
        assert!(m("x{2}", "", "xx"));
        assert!(m("ABC", "i", "xabcx"));
        assert!(m("a.c", "s", "a\nc"));
        assert!(!m("a.c", "", "a\nc"));
        assert!(m("a b # comment", "x", "ab"));
        assert!(m("\\Qa.b\\E", "", "a.b"));
        assert!(!m("\\Qa.b\\E", "", "axb"));
        assert!(m("\\bfoo\\b", "", "a foo b"));
        assert!(m("(?i)abc", "", "ABC"));
        assert!(m("[]a]", "", "]"));
        assert!(m("é", "", "café"));
    }

    #[test]
    fn matches_report_positions_and_groups() {
        let re = MongoRegex::new("(a)|(b)", "").unwrap();
        assert_eq!(
            re.find_at("xxb", 0),
            Some(RegexMatch {
                whole: 2..3,
                groups: vec![None, Some(2..3)]
            })
        );
        assert_eq!(re.find_at("ab", 1).map(|m| m.whole), Some(1..2));
        // The start offset keeps the text before it for anchors.
        let anchored = MongoRegex::new("^a", "").unwrap();
        assert_eq!(anchored.find_at("aa", 1), None);
        let named = MongoRegex::new("(?'x'\\d)(?:-)(\\d)", "").unwrap();
        assert_eq!(named.find_at("1-2", 0).map(|m| m.groups.len()), Some(2));
    }

    #[test]
    fn unsupported_constructs_are_errors_not_panics() {
        for p in [
            "(a)\\1", "a(?=b)", "a(?!b)", "(?<=a)b", "(?>a)", "a++", "(?R)", "\\k<n>",
        ] {
            let err = MongoRegex::new(p, "").unwrap_err();
            assert_eq!(err.code(), crate::error::ErrorCode::BadValue, "{p}");
        }
        assert_eq!(MongoRegex::new("(", "").unwrap_err().code().code(), 51091);
        assert_eq!(MongoRegex::new("[a", "").unwrap_err().code().code(), 51091);
        assert_eq!(
            MongoRegex::new("a", "z").unwrap_err().message(),
            "invalid flag in regex options: z"
        );
    }
}
