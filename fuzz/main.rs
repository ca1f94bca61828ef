//! `docgrid-fuzz`: the libFuzzer binary (feature `fuzz`), one binary for every target — the
//! target is `DOCGRID_FUZZ_TARGET` — so that the instrumented build links once. `scripts/fuzz`
//! builds it with coverage instrumentation and runs it; FUZZING.md tells how.
//!
//! Environment: `DOCGRID_FUZZ_TARGET=<name>` (required), `DOCGRID_FUZZ_LIST=1` lists the
//! targets, `DOCGRID_FUZZ_WRITE_SEEDS=<dir>` writes the target's seeds (and the dictionary,
//! `<dir>/../mongodb.dict`) and exits, `DOCGRID_FUZZ_MAX_DEPTH=<n>` keeps inputs within `n`
//! levels of nesting (mutations stay within it, deeper document inputs are skipped): a
//! campaign then looks for everything but the stack overflows deep nesting causes.
//!
//! The binary has a Rust `main` that hands over to libFuzzer (`LLVMFuzzerRunDriver`) rather
//! than libFuzzer's own `main`: only a Rust `main` starts Rust's runtime, whose stack overflow
//! handler runs on an alternate stack (on every thread). libFuzzer chains its SIGSEGV handler
//! to it, so a stack overflow — the failure deep nesting causes — prints Rust's message,
//! aborts, and libFuzzer reports the abort as a deadly signal and saves the input. Under
//! libFuzzer's `main` the overflow would kill the process silently, with nothing saved. The
//! report runs on the signal stack, so every thread gets one larger than Rust's (a few KiB,
//! which libFuzzer's crash report overflows).

#[path = "harness/mod.rs"]
mod harness;

use harness::mutate::Limits;
use harness::targets::{self, Input, Target};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::ffi::{CString, c_char, c_int};
use std::os::unix::ffi::OsStringExt;
use std::sync::{Mutex, OnceLock};

unsafe extern "C" {
    /// libFuzzer's entry point for programs with their own `main`.
    fn LLVMFuzzerRunDriver(
        argc: *mut c_int,
        argv: *mut *mut *mut c_char,
        test_one_input: extern "C" fn(*const u8, usize) -> c_int,
    ) -> c_int;
}

/// What libFuzzer calls per input: libfuzzer-sys's wrapper around the `fuzz_target!` below.
extern "C" fn test_one_input(data: *const u8, size: usize) -> c_int {
    // SAFETY: libFuzzer passes a buffer of `size` readable bytes.
    unsafe { libfuzzer_sys::test_input_wrap(data, size) }
}

/// The signal stack each thread reports a crash on.
const SIGNAL_STACK: usize = 1 << 20;

/// Replaces the calling thread's signal stack by one of [`SIGNAL_STACK`] bytes (leaked: a
/// thread may report a crash until it ends).
fn large_signal_stack() {
    let stack: &'static mut [u8] = Vec::leak(vec![0u8; SIGNAL_STACK]);
    let alt = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: stack.len(),
    };
    // SAFETY: the stack is valid, leaked memory of the size given.
    unsafe { libc::sigaltstack(&alt, std::ptr::null_mut()) };
}

fn main() {
    large_signal_stack();
    let _ = harness::THREAD_START.set(large_signal_stack);
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.into_vec()).expect("arguments hold no NUL"))
        .collect();
    let mut pointers: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    pointers.push(std::ptr::null_mut());
    let mut argc = c_int::try_from(args.len()).expect("few arguments");
    let mut argv = pointers.as_mut_ptr();
    // SAFETY: argc/argv describe NUL-terminated strings that outlive the call, as in C.
    let code = unsafe { LLVMFuzzerRunDriver(&mut argc, &mut argv, test_one_input) };
    std::process::exit(code);
}

/// Deep enough to overflow any stack: a campaign looks for what the short run must avoid,
/// unless `DOCGRID_FUZZ_MAX_DEPTH` says otherwise.
const MAX_DEPTH: usize = 200_000;
/// Inputs kept for the mutator to copy elements from (the seeds, then inputs it met).
const DONORS: usize = 4_096;

static TARGET: OnceLock<&'static Target> = OnceLock::new();
static DONOR_POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

fn target() -> &'static Target {
    TARGET.get_or_init(|| {
        let name = std::env::var("DOCGRID_FUZZ_TARGET").unwrap_or_default();
        targets::target(&name).unwrap_or_else(|| {
            eprintln!("DOCGRID_FUZZ_TARGET must name a target; one of:");
            list();
            std::process::exit(2)
        })
    })
}

fn max_depth() -> usize {
    static DEPTH: OnceLock<usize> = OnceLock::new();
    *DEPTH.get_or_init(|| {
        std::env::var("DOCGRID_FUZZ_MAX_DEPTH")
            .ok()
            .and_then(|d| d.parse().ok())
            .unwrap_or(MAX_DEPTH)
    })
}

fn list() {
    for t in targets::TARGETS {
        eprintln!("  {:<11} {}", t.name, t.about);
    }
}

fn init() {
    if std::env::var_os("DOCGRID_FUZZ_LIST").is_some() {
        list();
        std::process::exit(0);
    }
    let target = target();
    let unified = harness::seeds::unified_dir();
    let unified = unified.is_dir().then_some(unified.as_path());
    let seeds = harness::seeds::seeds(target, unified);
    if let Some(dir) = std::env::var_os("DOCGRID_FUZZ_WRITE_SEEDS") {
        let dir = std::path::PathBuf::from(dir);
        write_seeds(&dir, &seeds).expect("the seeds are written");
        eprintln!(
            "{} seeds for {} in {}",
            seeds.len(),
            target.name,
            dir.display()
        );
        std::process::exit(0);
    }
    let mut pool = DONOR_POOL.lock().expect("donor pool");
    pool.extend(seeds.into_iter().take(DONORS));
}

fn write_seeds(dir: &std::path::Path, seeds: &[Vec<u8>]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, seed) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:05}")), seed)?;
    }
    if let Some(parent) = dir.parent() {
        std::fs::write(parent.join("mongodb.dict"), harness::words::dictionary())?;
    }
    Ok(())
}

libfuzzer_sys::fuzz_target!(init: init(), |data: &[u8]| {
    let target = target();
    if target.input == Input::Document
        && max_depth() < MAX_DEPTH
        && harness::raw::depth(data) > max_depth()
    {
        return;
    }
    (target.run)(data);
});

libfuzzer_sys::fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    let mut rng = SmallRng::seed_from_u64(u64::from(seed));
    // A quarter of the time, and whenever the input has no structure left: libFuzzer's own
    // byte-level mutations (lengths, bit flips, dictionary words inserted anywhere).
    if rand::Rng::random_ratio(&mut rng, 1, 4) {
        return libfuzzer_sys::fuzzer_mutate(data, size, max_size);
    }
    let limits = Limits {
        max_depth: max_depth(),
        max_len: max_size,
    };
    let mutated = {
        let mut pool = DONOR_POOL.lock().expect("donor pool");
        if rand::Rng::random_ratio(&mut rng, 1, 64) {
            let slot = rand::Rng::random_range(&mut rng, 0..DONORS);
            if slot < pool.len() {
                pool[slot] = data[..size].to_vec();
            } else {
                pool.push(data[..size].to_vec());
            }
        }
        let donors: Vec<&[u8]> = pool.iter().map(Vec::as_slice).collect();
        harness::mutate(target().input, &data[..size], &mut rng, limits, &donors)
    };
    match mutated {
        Some(out) if out.len() <= max_size => {
            data[..out.len()].copy_from_slice(&out);
            out.len()
        }
        _ => libfuzzer_sys::fuzzer_mutate(data, size, max_size),
    }
});
