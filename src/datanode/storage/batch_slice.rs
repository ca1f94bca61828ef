//! `docgrid_batch_slice(on)`, the SQL function through which the node's own bulk writes (a
//! migration's clone inserts) give the database writer's thread the long scheduling slice of
//! `server::cpu::batch` for their statements: sqlx runs SQLite on a thread of its own, and a
//! function SQLite calls is the one way to run code there.

use crate::error::{MongoError, Result};
use crate::server::cpu::BatchSlice;
use rusqlite::ffi;
use sqlx::SqliteConnection;
use std::cell::RefCell;
use std::os::raw::c_int;

/// `SELECT docgrid_batch_slice(1)` / `(0)`: the statements between run with the long slice.
pub(super) const ON: &str = "SELECT docgrid_batch_slice(1)";
pub(super) const OFF: &str = "SELECT docgrid_batch_slice(0)";

thread_local! {
    /// The slice the function gave this thread, until `docgrid_batch_slice(0)` drops it.
    static HELD: RefCell<Option<BatchSlice>> = const { RefCell::new(None) };
}

/// Registers the function on `conn` (the writer's connection of a database file).
pub(super) async fn register(conn: &mut SqliteConnection) -> Result<()> {
    let mut handle = conn
        .lock_handle()
        .await
        .map_err(|e| super::sql_error("registering docgrid_batch_slice", e))?;
    let db = handle.as_raw_handle().as_ptr();
    // SAFETY: `db` is the connection's open handle, locked away from sqlx's worker for this
    // call; the name is a NUL-terminated string SQLite copies; the function keeps no user data.
    let rc = unsafe {
        ffi::sqlite3_create_function_v2(
            db,
            c"docgrid_batch_slice".as_ptr(),
            1,
            ffi::SQLITE_UTF8 | ffi::SQLITE_DIRECTONLY,
            std::ptr::null_mut(),
            Some(batch_slice),
            None,
            None,
            None,
        )
    };
    if rc != ffi::SQLITE_OK {
        return Err(MongoError::internal(format!(
            "registering docgrid_batch_slice: SQLite error {rc}"
        )));
    }
    Ok(())
}

/// The function's body, on the thread running the statement. Cannot panic (it is called
/// across the C boundary): the thread-local is only borrowed here, never re-entered.
unsafe extern "C" fn batch_slice(
    ctx: *mut ffi::sqlite3_context,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: SQLite passes `argc` valid values in `argv`, and `ctx` for the result.
    let on = argc == 1 && unsafe { ffi::sqlite3_value_int(*argv) } != 0;
    HELD.with(|held| {
        if let Ok(mut held) = held.try_borrow_mut() {
            *held = on.then(BatchSlice::new);
        }
    });
    // SAFETY: as above.
    unsafe { ffi::sqlite3_result_null(ctx) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::{Connection, Executor};

    /// The threads of this process sqlx runs SQLite on whose slice is the batch's (the
    /// kernel shows each thread's slice in `/proc`).
    fn batch_sliced_sqlx_threads() -> Vec<String> {
        let mut found = Vec::new();
        for task in std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
        {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            let sched = std::fs::read_to_string(task.path().join("sched")).unwrap_or_default();
            let long = sched.lines().any(|line| {
                line.starts_with("se.slice")
                    && line.split(':').nth(1).map(str::trim) == Some("50000000")
            });
            if comm.starts_with("sqlx-sqlite") && long {
                found.push(task.file_name().to_string_lossy().into_owned());
            }
        }
        found
    }

    #[tokio::test]
    async fn the_function_sets_the_slice_of_the_writer_thread() {
        let dir = tempfile::tempdir().unwrap();
        let options = super::super::database::connect_options(&dir.path().join("f.sqlite"));
        let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
        register(&mut conn).await.unwrap();
        let before = batch_sliced_sqlx_threads();
        conn.execute(ON).await.unwrap();
        let during = batch_sliced_sqlx_threads();
        // On this kernel (6.12+ with scheduler statistics), one more sqlx thread: the writer's.
        let shown =
            std::fs::read_to_string("/proc/self/sched").is_ok_and(|s| s.contains("se.slice"));
        if shown && during.len() == before.len() {
            // Older kernels keep one slice for all; nothing to see.
            eprintln!("this kernel ignores per-thread slices");
        } else if shown {
            assert_eq!(during.len(), before.len() + 1, "{before:?} {during:?}");
        }
        conn.execute(OFF).await.unwrap();
        let after = batch_sliced_sqlx_threads();
        assert!(after.len() <= before.len(), "{before:?} {after:?}");
        // Twice off, or on twice, is harmless.
        conn.execute(OFF).await.unwrap();
        conn.execute(ON).await.unwrap();
        conn.execute(ON).await.unwrap();
        conn.execute(OFF).await.unwrap();
    }
}
