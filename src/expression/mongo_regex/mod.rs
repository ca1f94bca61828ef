//! MongoDB regular expressions on PCRE2, as MongoDB runs them: UTF mode, the options `i m s x u`,
//! MongoDB's compile errors, and match limits so that a pathological pattern fails instead of
//! holding a thread.

mod ffi;

use crate::error::{MongoError, Result};
use ffi::{Code, Matcher};
use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

/// The longest pattern MongoDB lets PCRE2 compile, in bytes (its compile context's limit).
const MAX_PATTERN_LENGTH: usize = 32_764;

/// How many compiled patterns each thread keeps for the expression operators, whose pattern
/// is usually the same constant on every document.
const CACHE_SIZE: usize = 32;

/// A compiled MongoDB regular expression, keeping its source for equality and display.
#[derive(Clone, Debug)]
pub struct MongoRegex {
    pub pattern: String,
    pub options: String,
    compiled: Arc<Code>,
    /// For `^` followed by plain characters: the literal every match starts the subject with.
    prefix: Option<Arc<str>>,
}

/// Why matching stopped without an answer: PCRE2's own words ("match limit exceeded").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchFailure(pub String);

/// Where a match lies in the text, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegexMatch {
    pub whole: Range<usize>,
    /// Each capture group in pattern order; `None` when the group took no part in the match.
    pub groups: Vec<Option<Range<usize>>>,
}

thread_local! {
    static CACHE: RefCell<Vec<MongoRegex>> = const { RefCell::new(Vec::new()) };
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
        let flags = compile_options(options)?;
        if pattern.len() > MAX_PATTERN_LENGTH {
            return Err(invalid(
                "pattern string is longer than the limit set by the application",
            ));
        }
        let compiled = ffi::compile(pattern, flags).map_err(|message| invalid(&message))?;
        Ok(MongoRegex {
            pattern: pattern.to_string(),
            options: options.to_string(),
            compiled: Arc::new(compiled),
            prefix: anchored_literal(pattern, flags).map(Arc::from),
        })
    }

    /// [`MongoRegex::new`] through a small per-thread cache: for the expression operators,
    /// which meet the same pattern on every document.
    pub fn cached(pattern: &str, options: &str) -> Result<MongoRegex> {
        let hit = CACHE.with_borrow(|cache| {
            cache
                .iter()
                .find(|re| re.pattern == pattern && re.options == options)
                .cloned()
        });
        if let Some(re) = hit {
            return Ok(re);
        }
        let re = MongoRegex::new(pattern, options)?;
        CACHE.with_borrow_mut(|cache| {
            if cache.len() == CACHE_SIZE {
                cache.remove(0);
            }
            cache.push(re.clone());
        });
        Ok(re)
    }

    /// Whether the pattern matches, as a query filter asks: a match that fails (a limit
    /// reached) is no match, as in MongoDB.
    pub fn is_match(&self, text: &str) -> bool {
        self.matches(text).unwrap_or(false)
    }

    /// Whether the pattern matches, or why matching failed.
    pub fn matches(&self, text: &str) -> std::result::Result<bool, MatchFailure> {
        if let Some(prefix) = &self.prefix {
            return Ok(text.starts_with(&**prefix));
        }
        self.run(|matcher| self.compiled.is_match(text, 0, matcher))
    }

    /// The first match that starts at or after byte `start` of `text` (moved on to the next
    /// character boundary if it falls inside a character). Anchors and lookbehinds still see
    /// the text before `start`, as with PCRE's start offset.
    pub fn find_at(
        &self,
        text: &str,
        start: usize,
    ) -> std::result::Result<Option<RegexMatch>, MatchFailure> {
        let Some(start) = (start..=text.len()).find(|&i| text.is_char_boundary(i)) else {
            return Ok(None);
        };
        let found = self.run(|matcher| self.compiled.captures(text, start, matcher))?;
        Ok(found.map(|mut ranges| {
            let groups = ranges.split_off(1);
            RegexMatch {
                whole: ranges[0].clone().expect("the whole match is set"),
                groups,
            }
        }))
    }

    /// Runs `f` with the JIT, and with the interpreter where the JIT's stack ran out.
    fn run<T>(
        &self,
        f: impl Fn(Matcher) -> std::result::Result<T, i32>,
    ) -> std::result::Result<T, MatchFailure> {
        match f(Matcher::Jit) {
            Err(ffi::PCRE2_ERROR_JIT_STACKLIMIT) => f(Matcher::Interpreter),
            result => result,
        }
        .map_err(|code| MatchFailure(ffi::error_message(code)))
    }
}

/// The literal a pattern of the form `^literal` (plain characters only, no option changing what
/// `^` or a character means) requires at the start of the subject. Such prefix searches are
/// the most common regexes applications send (an index scan checks each candidate with it),
/// and for them a comparison of bytes answers exactly what PCRE2 would, without the cost of a
/// call into it, which is most of the time of a match that fails at the first character.
fn anchored_literal(pattern: &str, flags: u32) -> Option<&str> {
    const META: &[char] = &[
        '\\', '^', '$', '.', '|', '?', '*', '+', '(', ')', '[', ']', '{', '}',
    ];
    let changes_meaning = ffi::PCRE2_CASELESS | ffi::PCRE2_MULTILINE | ffi::PCRE2_EXTENDED;
    let literal = pattern.strip_prefix('^')?;
    (flags & changes_meaning == 0 && !literal.contains(META)).then_some(literal)
}

/// MongoDB's options as PCRE2 compile options; always UTF mode (MongoDB's strings are UTF-8),
/// without Unicode properties for `\d \w \s \b` (ASCII, as in MongoDB).
fn compile_options(options: &str) -> Result<u32> {
    let mut flags = ffi::PCRE2_UTF;
    for c in options.chars() {
        flags |= match c {
            'i' => ffi::PCRE2_CASELESS,
            'm' => ffi::PCRE2_MULTILINE,
            's' => ffi::PCRE2_DOTALL,
            'x' => ffi::PCRE2_EXTENDED,
            // MongoDB accepts `u` and changes nothing: UTF mode is always on.
            'u' => 0,
            other => {
                return Err(MongoError::location(
                    51108,
                    format!("invalid flag in regex options: {other}"),
                ));
            }
        };
    }
    Ok(flags)
}

fn invalid(detail: &str) -> MongoError {
    MongoError::location(51091, format!("Regular expression is invalid: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, o: &str, t: &str) -> bool {
        MongoRegex::new(p, o).unwrap().is_match(t)
    }

    #[test]
    fn pcre_anchors_classes_and_options() {
        assert!(m("^abc$", "", "abc"));
        assert!(m("^abc$", "", "abc\n"));
        assert!(!m("^abc$", "", "abc\nx"));
        assert!(m("^b$", "m", "a\nb\nc"));
        assert!(m("\\d+", "", "x12"));
        // `\d` and `\w` are ASCII, as MongoDB compiles without Unicode properties.
        assert!(!m("^\\d$", "", "٣"));
        assert!(!m("^\\w$", "", "é"));
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
        assert!(m("a", "imsxu", "A"));
    }

    #[test]
    fn unicode_subjects_and_case_folding() {
        assert!(m("é", "", "café"));
        assert!(m("^caf.$", "", "café"));
        assert!(m("CAFÉ", "i", "café"));
        assert!(m("^\\x{e9}$", "", "é"));
        assert!(m("^\\p{Lu}", "", "Élan"));
        assert!(!m("^.$", "", "ab"));
    }

    #[test]
    fn backreferences_and_lookaround() {
        assert!(m("(a)\\1", "", "xaa"));
        assert!(!m("(a)\\1", "", "xab"));
        assert!(m("^(?=.*b)a", "", "acb"));
        assert!(!m("^(?=.*b)a", "", "ac"));
        assert!(m("(?<!a)b", "", "cb"));
        assert!(!m("(?<!a)b", "", "ab"));
        assert!(m("(?<=a)b", "", "ab"));
        assert!(m("(?<w>x)\\k<w>", "", "xx"));
        assert!(m("a++b", "", "aab"));
        assert!(m("(?>a+)b", "", "aab"));
        assert!(m("^(\\((?:[^()]|(?1))*\\))$", "", "(a(b)c)"));
    }

    #[test]
    fn matches_report_positions_and_groups() {
        let re = MongoRegex::new("(a)|(b)", "").unwrap();
        assert_eq!(
            re.find_at("xxb", 0),
            Ok(Some(RegexMatch {
                whole: 2..3,
                groups: vec![None, Some(2..3)]
            }))
        );
        assert_eq!(re.find_at("ab", 1).unwrap().map(|m| m.whole), Some(1..2));
        // The start offset keeps the text before it for anchors and lookbehinds.
        let anchored = MongoRegex::new("^a", "").unwrap();
        assert_eq!(anchored.find_at("aa", 1), Ok(None));
        let behind = MongoRegex::new("(?<=a)b", "").unwrap();
        assert_eq!(
            behind.find_at("ab", 1).unwrap().map(|m| m.whole),
            Some(1..2)
        );
        let named = MongoRegex::new("(?'x'\\d)(?:-)(\\d)", "").unwrap();
        assert_eq!(
            named.find_at("1-2", 0).unwrap().map(|m| m.groups.len()),
            Some(2)
        );
    }

    #[test]
    fn many_groups_and_starts_inside_a_character() {
        // More groups than a thread's first match data holds: it grows.
        let pattern = "(a)".repeat(40);
        let re = MongoRegex::new(&pattern, "").unwrap();
        let found = re.find_at(&"a".repeat(41), 1).unwrap().unwrap();
        assert_eq!(found.whole, 1..41);
        assert_eq!(found.groups.len(), 40);
        assert_eq!(found.groups[39], Some(40..41));
        // A start inside a character moves to the next boundary; past the end finds nothing.
        let dot = MongoRegex::new(".", "").unwrap();
        assert_eq!(dot.find_at("éx", 1).unwrap().map(|m| m.whole), Some(2..3));
        assert_eq!(dot.find_at("é", 5), Ok(None));
        // Other threads have their own match data.
        let handle = std::thread::spawn(move || re.is_match(&"a".repeat(40)));
        assert!(handle.join().unwrap());
    }

    #[test]
    fn catastrophic_patterns_fail_instead_of_hanging() {
        let re = MongoRegex::new("(a+)+$", "").unwrap();
        let subject = format!("{}b", "a".repeat(40));
        assert_eq!(
            re.matches(&subject),
            Err(MatchFailure("match limit exceeded".into()))
        );
        assert_eq!(
            re.find_at(&subject, 0),
            Err(MatchFailure("match limit exceeded".into()))
        );
        // A filter treats the failure as no match, as MongoDB's matcher does.
        assert!(!re.is_match(&subject));
        // A pattern may lower its own limit.
        let lowered = MongoRegex::new("(*LIMIT_MATCH=10)(a+)+$", "").unwrap();
        assert!(lowered.matches(&format!("{}b", "a".repeat(12))).is_err());
    }

    #[test]
    fn deep_backtracking_outgrows_the_jit_stack_and_still_answers() {
        // Each repetition of an alternation keeps a backtracking frame: tens of thousands of
        // them overflow the JIT's stack, and the interpreter answers as MongoDB's would.
        let re = MongoRegex::new("^(?:a|b)*c$", "").unwrap();
        let subject = format!("{}c", "ab".repeat(50_000));
        assert_eq!(re.matches(&subject), Ok(true));
        assert_eq!(
            re.compiled.is_match(&subject, 0, Matcher::Jit),
            Err(ffi::PCRE2_ERROR_JIT_STACKLIMIT),
            "the JIT answered alone"
        );
        assert_eq!(
            re.find_at(&subject, 0).unwrap().map(|m| m.whole),
            Some(0..subject.len())
        );
    }

    #[test]
    fn invalid_patterns_and_options_answer_mongodb_errors() {
        let err = MongoRegex::new("(", "").unwrap_err();
        assert_eq!(err.code().code(), 51091);
        assert_eq!(
            err.message(),
            "Regular expression is invalid: missing closing parenthesis"
        );
        assert_eq!(
            MongoRegex::new("[a", "").unwrap_err().message(),
            "Regular expression is invalid: missing terminating ] for character class"
        );
        assert_eq!(
            MongoRegex::new("a\\", "").unwrap_err().message(),
            "Regular expression is invalid: \\ at end of pattern"
        );
        assert_eq!(
            MongoRegex::new("(a)\\2", "").unwrap_err().message(),
            "Regular expression is invalid: reference to non-existent subpattern"
        );
        let long = "a".repeat(MAX_PATTERN_LENGTH + 1);
        assert_eq!(MongoRegex::new(&long, "").unwrap_err().code().code(), 51091);
        assert!(MongoRegex::new(&long[1..], "").is_ok());
        let flag = MongoRegex::new("a", "z").unwrap_err();
        assert_eq!(flag.code().code(), 51108);
        assert_eq!(flag.message(), "invalid flag in regex options: z");
        assert_eq!(MongoRegex::new("a\0", "").unwrap_err().code().code(), 51091);
    }

    #[test]
    fn anchored_literals_skip_pcre2_and_agree_with_it() {
        assert_eq!(
            anchored_literal("^user_12", ffi::PCRE2_UTF),
            Some("user_12")
        );
        assert_eq!(anchored_literal("^é-x y", ffi::PCRE2_UTF), Some("é-x y"));
        for (pattern, flags) in [
            ("user_12", ffi::PCRE2_UTF),
            ("^user.12", ffi::PCRE2_UTF),
            ("^a|b", ffi::PCRE2_UTF),
            ("^a\\d", ffi::PCRE2_UTF),
            ("^ab", ffi::PCRE2_UTF | ffi::PCRE2_CASELESS),
            ("^ab", ffi::PCRE2_UTF | ffi::PCRE2_MULTILINE),
            ("^a b", ffi::PCRE2_UTF | ffi::PCRE2_EXTENDED),
        ] {
            assert_eq!(anchored_literal(pattern, flags), None, "{pattern}");
        }
        for (pattern, options) in [("^user_1", ""), ("^", ""), ("^é", "s"), ("^x", "u")] {
            let re = MongoRegex::new(pattern, options).unwrap();
            assert!(re.prefix.is_some(), "{pattern}");
            for text in ["user_12", "user_2", "xuser_1", "", "é", "\nuser_1", "x"] {
                let pcre2 = re.compiled.is_match(text, 0, Matcher::Jit).unwrap();
                assert_eq!(re.is_match(text), pcre2, "{pattern} on {text:?}");
            }
        }
    }

    #[test]
    fn the_cache_returns_the_same_compiled_pattern() {
        let first = MongoRegex::cached("^x+", "i").unwrap();
        let second = MongoRegex::cached("^x+", "i").unwrap();
        assert!(Arc::ptr_eq(&first.compiled, &second.compiled));
        assert!(second.is_match("XX"));
        let other = MongoRegex::cached("^x+", "").unwrap();
        assert!(!other.is_match("XX"));
        assert!(MongoRegex::cached("(", "").is_err());
    }
}
