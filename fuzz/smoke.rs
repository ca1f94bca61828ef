//! The fuzzer's short run, part of `cargo test`: every target runs its regression inputs
//! (`fuzz/regressions/<target>/`), a sample of its seeds, and then mutations of them made by
//! the same structure-aware mutator as the libFuzzer campaigns, from a fixed random seed, for
//! a few seconds. A panic anywhere (also one the dispatcher's panic guard catches) fails the
//! test; the input is saved under `target/fuzz-smoke/` to replay with `scripts/fuzz repro`.

// Shared with the libFuzzer binary, which uses parts of it (seed files, the dictionary) this
// run does not.
#[allow(dead_code)]
#[path = "harness/mod.rs"]
mod harness;

use harness::mutate::Limits;
use harness::targets::{self, Input, Target};
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The deepest nesting of documents and arrays the short run feeds the targets (mutations
/// stay within it; deeper seeds and regression inputs are skipped, and listed). Far past
/// `maxBSONDepth`: the wire layer refuses deeper documents before any parser reads them, and
/// the short run checks that nothing gets through to overflow a stack. Lower it only to
/// bisect: an overflow aborts the whole test binary.
const SHORT_RUN_MAX_NESTING: usize = 20_000;
/// The largest input the short run's mutations produce.
const SHORT_RUN_MAX_LEN: usize = 256 * 1024;
/// Seeds run as they are, at most (evenly spread over all of them).
const SEEDS: usize = 300;
/// Mutated inputs, at most, and the time they may take, per target.
const MUTATIONS: usize = 20_000;
const BUDGET: Duration = Duration::from_secs(4);

static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic, on any thread: the dispatcher turns a handler's panic into an
/// InternalError reply, which is still a finding.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn run_case(target: &Target, input: &[u8], what: &str) {
    let before = PANICS.load(Ordering::SeqCst);
    let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    if outcome.is_err() || PANICS.load(Ordering::SeqCst) != before {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-smoke");
        let file = dir.join(format!("{}-{what}", target.name));
        let saved = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, input));
        panic!(
            "target {} panicked on {what} ({} bytes; {}); replay: scripts/fuzz repro {} {}",
            target.name,
            input.len(),
            match saved {
                Ok(()) => "saved".to_string(),
                Err(e) => format!("not saved: {e}"),
            },
            target.name,
            file.display()
        );
    }
}

/// Whether the short run may feed `input` to a target of kind `kind` without overflowing a
/// stack (see [`SHORT_RUN_MAX_NESTING`]).
fn shallow(kind: Input, input: &[u8]) -> bool {
    match kind {
        // The wire layer reads no document deeper than its top level.
        Input::Message => true,
        Input::Document => harness::raw::depth(input) <= SHORT_RUN_MAX_NESTING,
    }
}

/// Regression inputs found but left to another part of the work (time and memory limits):
/// named `*.pending`, listed and skipped until their fix lands and the suffix goes.
const PENDING: &str = "pending";

fn regression_files(name: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .collect();
    files.sort();
    files
}

fn is_pending(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == PENDING)
}

fn file_name(path: &Path) -> Option<String> {
    Some(path.file_name()?.to_string_lossy().into_owned())
}

fn pending(name: &str) -> Vec<String> {
    regression_files(name)
        .iter()
        .filter(|p| is_pending(p))
        .filter_map(|p| file_name(p))
        .collect()
}

fn regressions(name: &str) -> Vec<(String, Vec<u8>)> {
    regression_files(name)
        .iter()
        .filter(|p| !is_pending(p))
        .filter_map(|p| Some((file_name(p)?, std::fs::read(p).ok()?)))
        .collect()
}

/// Runs a target's short run on a thread with the stack the server's runtime threads have
/// (`depth::THREAD_STACK_SIZE`), as commands run in the server.
fn short_run(name: &'static str) {
    let run = std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .stack_size(docgrid::depth::THREAD_STACK_SIZE)
        .spawn(move || short_run_here(name))
        .expect("a thread");
    if let Err(panic) = run.join() {
        std::panic::resume_unwind(panic);
    }
}

fn short_run_here(name: &str) {
    count_panics();
    let target = targets::target(name).expect("a target");
    let mut skipped = Vec::new();
    for (file, input) in regressions(name) {
        if shallow(target.input, &input) {
            run_case(target, &input, &format!("regression-{file}"));
        } else {
            skipped.push(file);
        }
    }
    let unified = harness::seeds::unified_dir();
    let all = harness::seeds::seeds(target, unified.is_dir().then_some(unified.as_path()));
    let step = all.len().div_ceil(SEEDS).max(1);
    let seeds: Vec<Vec<u8>> = all
        .into_iter()
        .step_by(step)
        .filter(|s| shallow(target.input, s))
        .collect();
    assert!(!seeds.is_empty(), "target {name} has seeds");
    for (i, seed) in seeds.iter().enumerate() {
        run_case(target, seed, &format!("seed-{i}"));
    }
    let donors: Vec<&[u8]> = seeds.iter().map(Vec::as_slice).collect();
    let limits = Limits {
        max_depth: SHORT_RUN_MAX_NESTING,
        max_len: SHORT_RUN_MAX_LEN,
    };
    let mut rng = SmallRng::seed_from_u64(name.bytes().map(u64::from).sum());
    let started = Instant::now();
    let mut runs = 0;
    while runs < MUTATIONS && started.elapsed() < BUDGET {
        let seed = donors.choose(&mut rng).expect("seeds");
        let mutated = harness::mutate(target.input, seed, &mut rng, limits, &donors);
        let mut input = mutated.unwrap_or_else(|| seed.to_vec());
        if target.input == Input::Message && rng.random_ratio(1, 4) && !input.is_empty() {
            // Raw bytes too: lengths and op codes are where framing bugs live.
            let at = rng.random_range(0..input.len());
            input[at] = rng.random();
        }
        if shallow(target.input, &input) {
            run_case(target, &input, &format!("mutation-{runs}"));
        }
        runs += 1;
    }
    eprintln!(
        "fuzz {name}: {} regression inputs ({} too deep for now: {:?}; pending: {:?}), {} seeds, {runs} mutations in {:.1?}",
        regressions(name).len(),
        skipped.len(),
        skipped,
        pending(name),
        seeds.len(),
        started.elapsed()
    );
}

#[test]
fn wire() {
    short_run("wire");
}

#[test]
fn bson() {
    short_run("bson");
}

#[test]
fn find() {
    short_run("find");
}

#[test]
fn aggregate() {
    short_run("aggregate");
}

#[test]
fn update() {
    short_run("update");
}

#[test]
fn bulk_write() {
    short_run("bulk_write");
}

#[test]
fn dispatch() {
    short_run("dispatch");
}

#[test]
fn every_target_has_a_short_run() {
    let tested = [
        "wire",
        "bson",
        "find",
        "aggregate",
        "update",
        "bulk_write",
        "dispatch",
    ];
    for t in targets::TARGETS {
        assert!(tested.contains(&t.name), "{} has no short run", t.name);
    }
}
