//! Regex matching throughput of the server's regex engine (`MongoRegex`, what `$regex`, `$in`
//! with regexes, `$regexMatch`/`$regexFind(All)` and `$jsonSchema` patterns run): a fixed set of
//! patterns with MongoDB's options, each tried on the same fixed subjects, in this process and
//! without I/O. Issue 25 asks that PCRE2 matches at least as fast as the translated engine it
//! replaces, on the same patterns.
//!
//! For each pattern it measures `is_match` over every subject (matches per second and MB/s of
//! subject text); F1 finds every match of a capturing pattern as `$regexFindAll` does
//! (`find_at` from the end of the previous match). The ceiling, measured in the same run, is
//! reading every byte of the same subjects once (a checksum): no engine can test a subject
//! faster than it can read it.
//!
//! Writes a table to stdout and JSON to `bench-results/regex.json`.
//!
//! Each figure is the best of 7 timings of `DOCGRID_REGEX_ROUNDS` passes.
//!
//! Run: `cargo bench --bench regex`. Environment: `DOCGRID_REGEX_SUBJECTS` subjects (default
//! 20000), `DOCGRID_REGEX_ROUNDS` passes over the subjects per timing (default 100).

use docgrid::expression::mongo_regex::MongoRegex;
use std::hint::black_box;
use std::time::Instant;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// A small deterministic generator (xorshift), so every run tests the same subjects.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }

    fn word(&mut self, letters: &[&str]) -> String {
        let len = 3 + self.next(8) as usize;
        (0..len)
            .map(|_| letters[self.next(letters.len() as u64) as usize])
            .collect()
    }
}

/// Subjects of the shapes applications filter on: user names, e-mail addresses, log lines,
/// phone numbers, key=value lists and accented words; 20 to 200 bytes each.
fn subjects(count: usize) -> Vec<String> {
    let ascii: Vec<&str> = "abcdefghijklmnopqrstuvwxyz"
        .split("")
        .filter(|s| !s.is_empty())
        .collect();
    let accented = ["a", "e", "é", "è", "ü", "ö", "ç", "n", "r", "s", "t"];
    let levels = ["INFO", "WARN", "ERROR", "DEBUG"];
    let events = ["timeout", "connected", "retrying", "Timeout", "closed"];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    (0..count)
        .map(|i| match i % 6 {
            0 => format!("user_{}", rng.next(100_000)),
            1 => format!(
                "{}@{}.{}",
                rng.word(&ascii),
                rng.word(&ascii),
                ["com", "org", "net"][rng.next(3) as usize]
            ),
            2 => format!(
                "2026-11-27 {:02}:{:02} {} {} {} after {} ms",
                rng.next(24),
                rng.next(60),
                levels[rng.next(4) as usize],
                rng.word(&ascii),
                events[rng.next(5) as usize],
                rng.next(10_000)
            ),
            3 => format!(
                "+1 {:03}-{:03}-{:04}",
                rng.next(1000),
                rng.next(1000),
                rng.next(10_000)
            ),
            4 => (0..1 + rng.next(6))
                .map(|_| format!("{}={}", rng.word(&ascii), rng.next(1000)))
                .collect::<Vec<_>>()
                .join(" "),
            _ => format!("{} {}", rng.word(&accented), rng.word(&accented)),
        })
        .collect()
}

/// The patterns, with the options MongoDB passes: what the translated engine could run.
const PATTERNS: &[(&str, &str, &str)] = &[
    ("P1", "^user_12", ""),
    ("P2", "timeout", ""),
    ("P3", "timeout", "i"),
    ("P4", "^[a-z]+@[a-z]+\\.(com|org)$", ""),
    ("P5", "\\d{3}-\\d{4}$", ""),
    ("P6", "^\\d{4}-\\d\\d-\\d\\d .*ERROR.*\\d+ ms$", ""),
    ("P7", "(é|ü)[a-z]*\\b", ""),
    ("P8", "^.*(retry|clos)ing", "m"),
];

/// Seconds per pass of `f`: the best of `REPEATS` timings of `rounds` passes each, so that
/// other processes on the machine inflate the figure as little as possible.
fn per_pass(rounds: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut hits = 0;
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let started = Instant::now();
        for _ in 0..rounds {
            hits = black_box(f());
        }
        best = best.min(started.elapsed().as_secs_f64() / rounds as f64);
    }
    (best, hits)
}

const REPEATS: usize = 7;

/// Every match of `re` in `text` as `$regexFindAll` walks them.
fn find_all(re: &MongoRegex, text: &str) -> usize {
    let mut found = 0;
    let mut at = 0;
    while at <= text.len() {
        let Some(m) = re.find_at(text, at).expect("no match limit on these") else {
            break;
        };
        found += 1;
        at = if m.whole.is_empty() {
            m.whole.end + 1
        } else {
            m.whole.end
        };
    }
    found
}

fn main() {
    let count = env_usize("DOCGRID_REGEX_SUBJECTS", 20_000);
    let rounds = env_usize("DOCGRID_REGEX_ROUNDS", 100);
    let subjects = subjects(count);
    let bytes: usize = subjects.iter().map(String::len).sum();
    let mb = bytes as f64 / 1e6;

    let (ceiling, _) = per_pass(rounds, || {
        subjects
            .iter()
            .map(|s| s.bytes().fold(0usize, |a, b| a.wrapping_add(b as usize)))
            .fold(0, usize::wrapping_add)
    });
    println!("{count} subjects, {bytes} bytes, {rounds} passes per pattern");
    println!(
        "{:<4} {:<42} {:>4} {:>8} {:>14} {:>10} {:>9}",
        "id", "pattern", "opts", "matched", "subjects/s", "MB/s", "ceiling"
    );
    let ceiling_mbs = mb / ceiling;
    let mut results = Vec::new();
    for &(id, pattern, options) in PATTERNS {
        let re = MongoRegex::new(pattern, options).expect("a valid pattern");
        let (secs, matched) = per_pass(rounds, || {
            subjects.iter().filter(|s| re.is_match(s)).count()
        });
        let rate = count as f64 / secs;
        println!(
            "{id:<4} {pattern:<42} {options:>4} {matched:>8} {rate:>14.0} {:>10.1} {:>8.3}",
            mb / secs,
            (mb / secs) / ceiling_mbs
        );
        results.push(serde_json::json!({
            "id": id, "pattern": pattern, "options": options, "matched": matched,
            "subjectsPerSecond": rate, "megabytesPerSecond": mb / secs,
        }));
    }
    let re = MongoRegex::new("([a-z]+)=(\\d+)", "").expect("a valid pattern");
    let (secs, found) = per_pass(rounds, || subjects.iter().map(|s| find_all(&re, s)).sum());
    println!(
        "{:<4} {:<42} {:>4} {found:>8} {:>14.0} {:>10.1} {:>8.3}",
        "F1",
        "([a-z]+)=(\\d+), every match",
        "",
        count as f64 / secs,
        mb / secs,
        (mb / secs) / ceiling_mbs
    );
    results.push(serde_json::json!({
        "id": "F1", "pattern": "([a-z]+)=(\\d+)", "options": "", "found": found,
        "subjectsPerSecond": count as f64 / secs, "megabytesPerSecond": mb / secs,
    }));
    println!("ceiling: reading every byte once, {ceiling_mbs:.0} MB/s");
    let report = serde_json::json!({
        "benchmark": "regex",
        "subjects": count,
        "bytes": bytes,
        "rounds": rounds,
        "repeats": REPEATS,
        "ceilingMegabytesPerSecond": ceiling_mbs,
        "results": results,
    });
    std::fs::create_dir_all("bench-results").expect("bench-results/");
    let json = serde_json::to_string_pretty(&report).expect("a JSON report");
    std::fs::write("bench-results/regex.json", json).expect("write the report");
}
