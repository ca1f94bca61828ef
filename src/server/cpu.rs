//! CPU work that grows with one request — parsing a large specification, planning over its
//! values, applying it, finishing a blocking stage over many documents — run so that the other
//! connections of the process are still served meanwhile. A tokio worker thread busy for seconds
//! inside one task holds up more than its queued tasks: the workers also take turns polling the
//! sockets, so while one is busy and the others sleep, no connection is read at all (measured:
//! a `ping` on a new connection waited 12 s for a 100,000-field projection to parse).
//! `block_in_place` turns the busy thread into a blocking one and hands its queue and its turn
//! at the sockets to another thread for the duration.
//!
//! Requests past [`HEAVY_REQUEST_BYTES`] run their whole handler that way; small requests stay
//! on the runtime thread, where the handoff would cost more than their work (a point read takes
//! tens of microseconds). Work that is heavy for its data rather than its size yields as it goes
//! (the shard's readers after every statement) or is handed off where it happens ([`run_sync`]).

use crate::command::CommandRequest;
use std::future::Future;

/// Requests (body and document sequences) from this size on run off the runtime threads: 256 KiB
/// of specification parse in a few milliseconds, a hundred times what the handoff costs, while
/// the inserts of a bulk load (1,000 documents of about 100 bytes) stay where they are.
pub const HEAVY_REQUEST_BYTES: usize = 256 * 1024;

/// Pipelines that took this many documents finish their blocking stages (`$sort`, `$group`,
/// `$setWindowFields`...) off the runtime thread: each document costs at least a microsecond
/// there.
pub const HEAVY_STAGE_INPUT: usize = 10_000;

/// Whether `request` is large enough to run off the runtime threads.
pub fn is_heavy(request: &CommandRequest) -> bool {
    let sequences: usize = request
        .sequences
        .iter()
        .flat_map(|s| &s.documents)
        .map(|d| d.as_bytes().len())
        .sum();
    request.body.as_bytes().len() + sequences >= HEAVY_REQUEST_BYTES
}

/// Whether this thread belongs to a multi-threaded runtime, where `block_in_place` is allowed
/// (unit tests run on a current-thread runtime, where it would panic).
fn on_multi_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// Runs synchronous `work` off the runtime thread when `heavy`, inline otherwise.
pub fn run_sync<T>(heavy: bool, work: impl FnOnce() -> T) -> T {
    if heavy && on_multi_thread_runtime() {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// Drives `future` to completion on this thread, handed off from the runtime, when `heavy`;
/// awaits it as usual otherwise. Its IO and timers still run through the runtime (a handed-off
/// thread may block on futures that use them), and nesting is allowed: an in-process call from
/// a heavy request to another role's heavy handler runs on the same thread.
pub async fn run<F: Future>(heavy: bool, future: F) -> F::Output {
    if heavy && on_multi_thread_runtime() {
        let runtime = tokio::runtime::Handle::current();
        tokio::task::block_in_place(|| {
            let output = runtime.block_on(future);
            release_freed_memory();
            output
        })
    } else {
        future.await
    }
}

/// The nice value of [`background`] threads: the least favoured, so that the scheduler runs any
/// request's thread first when the cores are busy and gives the background work what is left.
const BACKGROUND_NICE: libc::c_int = 19;

/// Drives `future` to completion on a thread of the lowest scheduling priority, while this one
/// is handed off from the runtime: work the node does for itself over many documents (a
/// migration's clone reads) must not make the requests of its clients wait for a core.
/// Only work that holds nothing a request may wait for belongs here — a write transaction
/// held by a thread the scheduler postpones would make every write wait with it.
pub async fn background<F>(future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    if !on_multi_thread_runtime() {
        return future.await;
    }
    let runtime = tokio::runtime::Handle::current();
    let future = std::sync::Mutex::new(Some(future));
    let take = || future.lock().expect("poisoned").take().expect("taken once");
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("docgrid-background".into())
                .spawn_scoped(scope, || {
                    lower_this_threads_priority();
                    runtime.block_on(take())
                });
            match worker {
                Ok(worker) => worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: the work runs here, at the request's priority.
                Err(_) => runtime.block_on(take()),
            }
        })
    })
}

/// Gives the calling thread [`BACKGROUND_NICE`]. Linux keeps a nice value per thread (the
/// process's other threads keep theirs); elsewhere `setpriority` would lower the whole
/// process, so the work runs at the usual priority there.
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `setpriority` reads no memory of ours; `who` 0 is the calling thread on Linux.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
    }
}

/// Gives what a heavy request freed back to the system. Each handoff puts another thread in the
/// runtime's place, and glibc gives threads malloc arenas of their own (up to 8 per core) that
/// keep freed memory for their next allocations: without this, every heavy request can leave
/// its peak resident in another arena (measured: 1.2 GB more after each of three `$or`s of
/// 1,000,000 branches). Trimming walks the arenas' free lists, milliseconds after a request
/// that took seconds, on the request's own thread.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory glibc's allocator holds free, under the
    // allocator's own locks; it touches no memory of ours.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, doc};
    use std::time::{Duration, Instant};

    fn request(bytes: usize) -> CommandRequest {
        let body = doc! {"find": "c", "filter": {"s": "x".repeat(bytes)}};
        CommandRequest::new("db", RawDocumentBuf::from_document(&body).unwrap()).unwrap()
    }

    #[test]
    fn large_requests_are_heavy() {
        assert!(!is_heavy(&request(1000)));
        assert!(is_heavy(&request(HEAVY_REQUEST_BYTES)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_heavy_handler_leaves_the_runtime_to_other_tasks() {
        // One worker thread, running both tasks: a busy handler there, were it not handed
        // off, would keep the ticker from running until it is done.
        let started = Instant::now();
        let busy = tokio::spawn(run(true, async move {
            // Nested, as an in-process call from a router's handler to a shard's.
            run(true, async {
                std::thread::sleep(Duration::from_millis(300));
            })
            .await;
            run_sync(true, || std::thread::sleep(Duration::from_millis(300)));
            started.elapsed()
        }));
        let ticker = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            started.elapsed()
        });
        let (busy, ticked) = (busy.await.unwrap(), ticker.await.unwrap());
        assert!(
            ticked < busy,
            "the ticker ran at {ticked:?}, after the busy handler"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn background_work_runs_on_a_low_priority_thread() {
        // SAFETY: `getpriority` reads the calling thread's nice value; no memory of ours.
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let before = nice();
        // The work may borrow from the caller, which waits for it.
        let borrowed = String::from("borrowed");
        let (name, theirs, len) = background(async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let name = std::thread::current().name().map(str::to_string);
            (name, nice(), borrowed.len())
        })
        .await;
        assert_eq!((name.as_deref(), len), (Some("docgrid-background"), 8));
        #[cfg(target_os = "linux")]
        assert_eq!(theirs, BACKGROUND_NICE);
        assert_eq!(nice(), before, "the caller's thread keeps its priority");
    }

    #[tokio::test]
    async fn a_current_thread_runtime_runs_inline() {
        assert_eq!(run(true, async { run_sync(true, || 7) }).await, 7);
    }
}
