//! PCRE2's C API, the only unsafe code of the regex engine: compiling and JIT-compiling a
//! pattern, and matching through per-thread match data and match context, so that a match
//! costs no allocation, no lock and no check of a subject Rust already knows is valid UTF-8.

use libc::c_void;
use pcre2_sys::{
    PCRE2_ERROR_NOMATCH, PCRE2_INFO_CAPTURECOUNT, PCRE2_JIT_COMPLETE, PCRE2_NO_JIT,
    PCRE2_NO_UTF_CHECK, pcre2_code_8, pcre2_code_free_8, pcre2_compile_8,
    pcre2_get_error_message_8, pcre2_get_ovector_count_8, pcre2_get_ovector_pointer_8,
    pcre2_jit_compile_8, pcre2_jit_match_8, pcre2_match_8, pcre2_match_context_8,
    pcre2_match_context_create_8, pcre2_match_context_free_8, pcre2_match_data_8,
    pcre2_match_data_create_8, pcre2_match_data_free_8, pcre2_pattern_info_8,
    pcre2_set_heap_limit_8, pcre2_set_match_limit_8,
};
use std::cell::RefCell;
use std::ops::Range;
use std::ptr::{self, NonNull};

pub use pcre2_sys::{
    PCRE2_CASELESS, PCRE2_DOTALL, PCRE2_ERROR_JIT_STACKLIMIT, PCRE2_EXTENDED, PCRE2_MULTILINE,
    PCRE2_UTF,
};

/// PCRE2's default match limit, as MongoDB runs with it: how many times the matcher may
/// backtrack into a subpattern before it gives up with "match limit exceeded". It bounds the
/// time a catastrophic pattern like `(a+)+$` takes, JIT or not.
const MATCH_LIMIT: u32 = 10_000_000;

/// The interpreter's backtracking memory for one match, in KiB (PCRE2's default is 20 GB).
const HEAP_LIMIT_KIB: u32 = 256 * 1024;

/// PCRE2_UNSET: the offsets of a group that took no part in the match.
const UNSET: usize = usize::MAX;

/// Which of PCRE2's matchers runs: the JIT-compiled code, or the interpreter (which keeps its
/// backtracking on the heap, where the JIT's fixed stack runs out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matcher {
    Jit,
    Interpreter,
}

/// A compiled pattern, JIT-compiled where the platform has a JIT.
#[derive(Debug)]
pub struct Code {
    code: NonNull<pcre2_code_8>,
    jit: bool,
    /// Capture groups, the whole match excluded.
    groups: u32,
}

// SAFETY: a compiled PCRE2 pattern is immutable once `compile` returns (the JIT compilation
// writes into it before that), and PCRE2 documents it as usable by many threads at once.
unsafe impl Send for Code {}
// SAFETY: as above; every matching function takes the code as `*const`.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        // SAFETY: `code` came from `pcre2_compile_8` and is freed only here, once.
        unsafe { pcre2_code_free_8(self.code.as_ptr()) }
    }
}

/// Compiles `pattern` with PCRE2's compile `options`, then JIT-compiles it if it can; a
/// compile error is PCRE2's message.
pub fn compile(pattern: &str, options: u32) -> Result<Code, String> {
    let (mut error, mut offset) = (0, 0);
    // SAFETY: the pointer and length describe `pattern`'s bytes, which PCRE2 only reads during
    // the call; the error outputs are valid locals; a null compile context means defaults.
    let raw = unsafe {
        pcre2_compile_8(
            pattern.as_ptr(),
            pattern.len(),
            options,
            &mut error,
            &mut offset,
            ptr::null_mut(),
        )
    };
    let Some(code) = NonNull::new(raw) else {
        return Err(error_message(error));
    };
    let mut groups = 0u32;
    // SAFETY: `code` is a valid compiled pattern; CAPTURECOUNT writes one u32 to `groups`.
    let info = unsafe {
        pcre2_pattern_info_8(
            code.as_ptr(),
            PCRE2_INFO_CAPTURECOUNT,
            (&raw mut groups).cast::<c_void>(),
        )
    };
    debug_assert_eq!(info, 0);
    // SAFETY: `code` is valid and not yet shared with any other thread. A JIT failure (no JIT
    // on this platform, or out of memory) leaves the interpreter to answer.
    let jit = unsafe { pcre2_jit_compile_8(code.as_ptr(), PCRE2_JIT_COMPLETE) } == 0;
    Ok(Code { code, jit, groups })
}

impl Code {
    /// Whether the pattern matches `subject` at or after byte `start` (a character boundary
    /// within the subject), or PCRE2's error code.
    pub fn is_match(&self, subject: &str, start: usize, matcher: Matcher) -> Result<bool, i32> {
        Ok(self.run(subject, start, matcher, |_| ())?.is_some())
    }

    /// The first match at or after byte `start` (a character boundary within the subject): the
    /// whole match, then each group's, `None` for a group that took no part.
    pub fn captures(
        &self,
        subject: &str,
        start: usize,
        matcher: Matcher,
    ) -> Result<Option<Vec<Option<Range<usize>>>>, i32> {
        self.run(subject, start, matcher, |ovector| {
            ovector
                .chunks_exact(2)
                .map(|pair| (pair[0] != UNSET).then(|| pair[0]..pair[1]))
                .collect()
        })
    }

    /// One match with this thread's match data; `read` sees the offsets pairs while they are
    /// valid (the whole match and every group).
    fn run<T>(
        &self,
        subject: &str,
        start: usize,
        matcher: Matcher,
        read: impl FnOnce(&[usize]) -> T,
    ) -> Result<Option<T>, i32> {
        assert!(
            subject.is_char_boundary(start),
            "a match starts on a character boundary"
        );
        MATCHING.with_borrow_mut(|slot| {
            let state = slot.get_or_insert_with(MatchState::new);
            let pairs = self.groups + 1;
            state.reserve(pairs);
            // SAFETY: `subject` is a `&str`, valid UTF-8 by construction, and `start` is a
            // character boundary within it (asserted above), which is what PCRE2_NO_UTF_CHECK and
            // `pcre2_jit_match` (which skips every check) require; PCRE2 only reads the subject
            // during the call. `self.code` is a valid pattern, JIT-compiled when `self.jit`
            // (required by `pcre2_jit_match`). The match data and context belong to this
            // thread and no other call uses them during this one (the borrow of `MATCHING`).
            let rc = unsafe {
                if matcher == Matcher::Jit && self.jit {
                    pcre2_jit_match_8(
                        self.code.as_ptr(),
                        subject.as_ptr(),
                        subject.len(),
                        start,
                        0,
                        state.data.as_ptr(),
                        state.context.as_ptr(),
                    )
                } else {
                    pcre2_match_8(
                        self.code.as_ptr(),
                        subject.as_ptr(),
                        subject.len(),
                        start,
                        PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                        state.data.as_ptr(),
                        state.context.as_ptr(),
                    )
                }
            };
            match rc {
                PCRE2_ERROR_NOMATCH => Ok(None),
                rc if rc < 0 => Err(rc),
                // A match; the match data holds at least `pairs` pairs (reserved above).
                _ => {
                    // SAFETY: the ovector of `state.data` holds `state.pairs` >= `pairs` pairs
                    // of offsets, set by the match that just succeeded and valid until the
                    // next match on this thread, which cannot start while `read` runs.
                    let ovector = unsafe {
                        std::slice::from_raw_parts(
                            pcre2_get_ovector_pointer_8(state.data.as_ptr()),
                            2 * pairs as usize,
                        )
                    };
                    Ok(Some(read(ovector)))
                }
            }
        })
    }
}

/// PCRE2's message for an error code ("match limit exceeded").
pub fn error_message(code: i32) -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: PCRE2 writes at most `buffer.len()` bytes (a NUL-terminated message) to it.
    let len = unsafe { pcre2_get_error_message_8(code, buffer.as_mut_ptr(), buffer.len()) };
    usize::try_from(len).map_or_else(
        |_| format!("PCRE2 error {code}"),
        |len| String::from_utf8_lossy(&buffer[..len]).into_owned(),
    )
}

/// One thread's match data (the offsets of a match) and match context (the limits), made
/// once and reused by every match on the thread.
struct MatchState {
    context: NonNull<pcre2_match_context_8>,
    data: NonNull<pcre2_match_data_8>,
    /// The offset pairs `data` holds.
    pairs: u32,
}

thread_local! {
    /// Made on the thread's first match; a constant initializer keeps each access to a flag
    /// test (a lazily initialized thread-local costs a state check on every access).
    static MATCHING: RefCell<Option<MatchState>> = const { RefCell::new(None) };
}

impl MatchState {
    fn new() -> MatchState {
        // SAFETY: a null general context means PCRE2's malloc; the result is checked.
        let context = NonNull::new(unsafe { pcre2_match_context_create_8(ptr::null_mut()) })
            .expect("memory for a PCRE2 match context");
        // SAFETY: `context` is a valid match context owned by this state.
        unsafe {
            pcre2_set_match_limit_8(context.as_ptr(), MATCH_LIMIT);
            pcre2_set_heap_limit_8(context.as_ptr(), HEAP_LIMIT_KIB);
        }
        MatchState {
            context,
            data: match_data(16),
            pairs: 16,
        }
    }

    /// Makes the match data hold at least `pairs` offset pairs.
    fn reserve(&mut self, pairs: u32) {
        if pairs > self.pairs {
            let data = match_data(pairs);
            // SAFETY: the old block came from `match_data`, no match is running on it, and it
            // is replaced at once.
            unsafe { pcre2_match_data_free_8(self.data.as_ptr()) };
            self.data = data;
            self.pairs = pairs;
        }
    }
}

fn match_data(pairs: u32) -> NonNull<pcre2_match_data_8> {
    // SAFETY: a null general context means PCRE2's malloc; the result is checked.
    let data = NonNull::new(unsafe { pcre2_match_data_create_8(pairs, ptr::null_mut()) })
        .expect("memory for PCRE2 match data");
    // SAFETY: `data` is a valid match data block.
    debug_assert!(unsafe { pcre2_get_ovector_count_8(data.as_ptr()) } >= pairs);
    data
}

impl Drop for MatchState {
    fn drop(&mut self) {
        // SAFETY: both came from their create functions, are owned by this state alone and
        // are freed once, when the thread ends.
        unsafe {
            pcre2_match_data_free_8(self.data.as_ptr());
            pcre2_match_context_free_8(self.context.as_ptr());
        }
    }
}
