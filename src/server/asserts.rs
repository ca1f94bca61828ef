//! Failures counted as MongoDB counts assertions (`serverStatus.asserts`), and the containment
//! of panics in the tasks a process runs: a panic is a bug, never the end of a process, a
//! connection's other work or a background loop.

use bson::{Document, doc};
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// Errors a command answered (MongoDB's `uassert`s).
static USER: AtomicI64 = AtomicI64::new(0);
/// Panics caught: internal errors that failed an operation or a task without ending the process
/// (MongoDB's `tassert`s, which it counts as tripwire assertions).
static TRIPWIRE: AtomicI64 = AtomicI64::new(0);

/// Counts an error answered to a command.
pub fn count_user() {
    USER.fetch_add(1, Relaxed);
}

/// Counts a panic caught, and logs it with what was running.
pub fn count_panic(what: &str, panic: &(dyn std::any::Any + Send)) -> String {
    TRIPWIRE.fetch_add(1, Relaxed);
    let message = panic_message(panic);
    tracing::error!(task = %what, panic = %message, "caught a panic; the process goes on");
    message
}

/// The text a panic carried.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// `serverStatus.asserts`, for the whole process (every role it runs).
pub fn report() -> Document {
    doc! {
        "regular": 0_i32,
        "warning": 0_i32,
        "msg": 0_i32,
        "user": USER.load(Relaxed) as i32,
        "tripwire": TRIPWIRE.load(Relaxed) as i32,
        "rollovers": 0_i32,
    }
}

/// Runs `work`; a panic in it is counted and logged, and comes back as `None`.
pub async fn contained<T>(what: &str, work: impl Future<Output = T>) -> Option<T> {
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(value) => Some(value),
        Err(panic) => {
            count_panic(what, &*panic);
            None
        }
    }
}

/// Spawns a task whose panic is counted and logged ([`contained`]).
pub fn spawn_contained<F>(what: &'static str, work: F) -> tokio::task::JoinHandle<Option<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(contained(what, work))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_task_is_counted_and_the_caller_goes_on() {
        let before = report().get_i32("tripwire").unwrap();
        let joined = spawn_contained("test task", async {
            if true {
                panic!("boom")
            }
        })
        .await
        .expect("the task ended normally");
        assert!(joined.is_none());
        assert!(report().get_i32("tripwire").unwrap() > before);
        assert_eq!(contained("fine", async { 7 }).await, Some(7));
    }
}
