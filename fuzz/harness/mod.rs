//! The fuzzer's shared part, used by the libFuzzer binary (`fuzz/main.rs`) and by the short
//! seeded run in `cargo test` (`fuzz/smoke.rs`): the targets, their seeds, and the
//! structure-aware mutator both drive them with.

pub mod mutate;
pub mod raw;
pub mod seeds;
pub mod targets;
pub mod words;

use mutate::Limits;
use rand::Rng;
use std::ops::Range;
use std::sync::OnceLock;
use targets::Input;

/// Run on every thread a target starts (the dispatch target's runtime workers): the libFuzzer
/// binary gives each a signal stack large enough to report a stack overflow from.
pub static THREAD_START: OnceLock<fn()> = OnceLock::new();

/// OP_MSG's op code, and where its first section's kind byte sits (header, then flags).
const OP_MSG: i32 = 2013;
const FIRST_SECTION: usize = 20;

/// One structure-aware mutation of an input of kind `input`; `None` when the input has no
/// structure to work on (the caller falls back to byte-level mutation).
pub fn mutate(
    input: Input,
    bytes: &[u8],
    rng: &mut impl Rng,
    limits: Limits,
    donors: &[&[u8]],
) -> Option<Vec<u8>> {
    let rounds = rng.random_range(1..=4);
    match input {
        Input::Document => mutate::document(bytes, rng, limits, donors, rounds),
        Input::Message => message(bytes, rng, limits, donors, rounds),
    }
}

/// The body of an uncompressed OP_MSG whose first section is its body.
fn body_range(message: &[u8]) -> Option<Range<usize>> {
    let op = i32::from_le_bytes(message.get(12..16)?.try_into().ok()?);
    if op != OP_MSG || *message.get(FIRST_SECTION)? != 0 {
        return None;
    }
    let start = FIRST_SECTION + 1;
    let len = i32::from_le_bytes(message.get(start..start + 4)?.try_into().ok()?);
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    (end <= message.len()).then_some(start..end)
}

/// Mutates the body of an OP_MSG as a document, then fixes the message length and (mostly)
/// its checksum, and sometimes wraps the message in OP_COMPRESSED.
fn message(
    bytes: &[u8],
    rng: &mut impl Rng,
    limits: Limits,
    donors: &[&[u8]],
    rounds: usize,
) -> Option<Vec<u8>> {
    let body = body_range(bytes)?;
    let donor_bodies: Vec<&[u8]> = donors
        .iter()
        .filter_map(|d| body_range(d).map(|r| &d[r]))
        .collect();
    let new_body = mutate::document(&bytes[body.clone()], rng, limits, &donor_bodies, rounds)?;
    let mut out = Vec::with_capacity(bytes.len() + new_body.len());
    out.extend_from_slice(&bytes[..body.start]);
    out.extend_from_slice(&new_body);
    out.extend_from_slice(&bytes[body.end..]);
    let len = out.len() as i32;
    out[..4].copy_from_slice(&len.to_le_bytes());
    let checksummed = out.get(16).is_some_and(|flags| flags & 1 == 1);
    if checksummed && out.len() >= 24 && rng.random_ratio(9, 10) {
        let end = out.len() - 4;
        let crc = crc32c::crc32c(&out[..end]);
        out[end..].copy_from_slice(&crc.to_le_bytes());
    }
    if rng.random_ratio(1, 8) {
        out = seeds::noop_compressed(&out);
    }
    Some(out)
}
