//! MongoDB regular expressions on PCRE2, as MongoDB runs them: UTF mode, the options `i m s x u`,
//! MongoDB's compile errors, and match limits so that a pathological pattern fails instead of
//! holding a thread.

use crate::error::{MongoError, Result};
use pcre2::bytes::{Regex, RegexBuilder};
use std::cell::RefCell;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// The longest pattern MongoDB lets PCRE2 compile, in bytes (its compile context's limit).
const MAX_PATTERN_LENGTH: usize = 32_764;

/// PCRE2's default match limit, as MongoDB runs with it: how many times the matcher may
/// backtrack into a subpattern before it gives up with "match limit exceeded". It bounds the
/// time a catastrophic pattern like `(a+)+$` takes, JIT or not.
const MATCH_LIMIT: u32 = 10_000_000;

/// The interpreter's backtracking memory for one match, in KiB (PCRE2's default is 20 GB).
const HEAP_LIMIT_KIB: u32 = 256 * 1024;

/// How many compiled patterns each thread keeps for the expression operators, whose pattern
/// is usually the same constant on every document.
const CACHE_SIZE: usize = 32;

/// A compiled MongoDB regular expression, keeping its source for equality and display.
#[derive(Clone, Debug)]
pub struct MongoRegex {
    pub pattern: String,
    pub options: String,
    compiled: Arc<Compiled>,
}

/// The JIT-compiled pattern and, made on first need, the same pattern for PCRE2's interpreter:
/// the JIT's stack is small and fixed, and where it runs out the interpreter (MongoDB's engine,
/// which keeps its backtracking on the heap) still answers.
#[derive(Debug)]
struct Compiled {
    jit: Regex,
    interpreter: OnceLock<std::result::Result<Regex, pcre2::Error>>,
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
        let builder = builder(options)?;
        if pattern.len() > MAX_PATTERN_LENGTH {
            return Err(invalid(
                "pattern string is longer than the limit set by the application",
            ));
        }
        let jit = builder
            .build(&limited(pattern))
            .map_err(|e| invalid(&pcre_message(&e)))?;
        Ok(MongoRegex {
            pattern: pattern.to_string(),
            options: options.to_string(),
            compiled: Arc::new(Compiled {
                jit,
                interpreter: OnceLock::new(),
            }),
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
        self.run(|re| re.is_match(text.as_bytes()))
    }

    /// The first match that starts at or after byte `start` of `text`. Anchors and lookbehinds
    /// still see the text before `start`, as with PCRE's start offset.
    pub fn find_at(
        &self,
        text: &str,
        start: usize,
    ) -> std::result::Result<Option<RegexMatch>, MatchFailure> {
        self.run(|re| {
            let mut locations = re.capture_locations();
            let Some(whole) = re.captures_read_at(&mut locations, text.as_bytes(), start)? else {
                return Ok(None);
            };
            let groups = (1..locations.len())
                .map(|i| locations.get(i).map(|(s, e)| s..e))
                .collect();
            Ok(Some(RegexMatch {
                whole: whole.start()..whole.end(),
                groups,
            }))
        })
    }

    /// Runs `f` on the JIT-compiled pattern, and on the interpreter's where the JIT's stack
    /// ran out.
    fn run<T>(
        &self,
        f: impl Fn(&Regex) -> std::result::Result<T, pcre2::Error>,
    ) -> std::result::Result<T, MatchFailure> {
        let failure = |e: pcre2::Error| MatchFailure(pcre_message(&e));
        match f(&self.compiled.jit) {
            Err(e) if e.code() == pcre2_sys::PCRE2_ERROR_JIT_STACKLIMIT => {
                let interpreter = self.compiled.interpreter.get_or_init(|| {
                    let mut builder = builder(&self.options).expect("options checked at compile");
                    builder
                        .jit_if_available(false)
                        .build(&limited(&self.pattern))
                });
                match interpreter {
                    Ok(re) => f(re).map_err(failure),
                    Err(e) => Err(failure(e.clone())),
                }
            }
            result => result.map_err(failure),
        }
    }
}

/// MongoDB's options as PCRE2 compile options; always UTF mode (MongoDB's strings are UTF-8),
/// without Unicode properties for `\d \w \s \b` (ASCII, as in MongoDB).
fn builder(options: &str) -> Result<RegexBuilder> {
    let mut builder = RegexBuilder::new();
    builder.utf(true).jit_if_available(true);
    for c in options.chars() {
        match c {
            'i' => builder.caseless(true),
            'm' => builder.multi_line(true),
            's' => builder.dotall(true),
            'x' => builder.extended(true),
            // MongoDB accepts `u` and changes nothing: UTF mode is always on.
            'u' => &mut builder,
            other => {
                return Err(MongoError::location(
                    51108,
                    format!("invalid flag in regex options: {other}"),
                ));
            }
        };
    }
    Ok(builder)
}

/// The pattern with the match limits in front, as PCRE2's start-of-pattern settings (the
/// crate has no match context to set them on). A pattern's own settings may only lower them.
fn limited(pattern: &str) -> String {
    format!("(*LIMIT_MATCH={MATCH_LIMIT})(*LIMIT_HEAP={HEAP_LIMIT_KIB}){pattern}")
}

fn invalid(detail: &str) -> MongoError {
    MongoError::location(51091, format!("Regular expression is invalid: {detail}"))
}

/// PCRE2's message without the crate's "PCRE2: error compiling pattern at offset 3: " prefix:
/// MongoDB reports the message alone.
fn pcre_message(error: &pcre2::Error) -> String {
    let text = error.to_string();
    text.splitn(3, ": ").nth(2).unwrap_or(&text).to_string()
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
        assert!(
            re.compiled.interpreter.get().is_some(),
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
