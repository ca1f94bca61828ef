//! Server parameters (`getParameter`/`setParameter`): the ones this server has and honours.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

#[derive(Clone, Debug)]
struct Param {
    value: Bson,
    runtime: bool,
    /// The inclusive range a numeric parameter must stay in, as MongoDB's IDL bounds.
    bounds: Option<(i64, i64)>,
}

/// The parameter registry of one process role.
#[derive(Debug)]
pub struct Parameters {
    params: RwLock<BTreeMap<&'static str, Param>>,
    /// `minSnapshotHistoryWindowInSeconds` as a data node's storage reads it on every commit
    /// (shared with `Storage`, set in place by `setParameter`).
    snapshot_history_window: Arc<AtomicU32>,
}

/// `minSnapshotHistoryWindowInSeconds`' default (MongoDB's 5 minutes).
pub const DEFAULT_SNAPSHOT_HISTORY_WINDOW_SECS: i32 = 300;

/// `cursorTimeoutMillis` default: idle cursors die after 10 minutes.
pub const DEFAULT_CURSOR_TIMEOUT_MS: i64 = 600_000;

impl Parameters {
    /// The parameters with their defaults.
    pub fn new() -> Self {
        let mut params = BTreeMap::new();
        let mut add = |name, value: Bson, runtime| {
            params.insert(
                name,
                Param {
                    value,
                    runtime,
                    bounds: None,
                },
            );
        };
        add(
            "featureCompatibilityVersion",
            Bson::Document(doc! {"version": "8.0"}),
            false,
        );
        add(
            "cursorTimeoutMillis",
            Bson::Int64(DEFAULT_CURSOR_TIMEOUT_MS),
            true,
        );
        add("enableTestCommands", Bson::Boolean(false), false);
        // How long a `$clusterTime` signing key is used (`server::cluster_keys`).
        add(
            "KeysRotationIntervalSec",
            Bson::Int32(super::cluster_keys::DEFAULT_ROTATION_SECS as i32),
            false,
        );
        // The logical session cache (`server::sessions`, `server::session_jobs`).
        add("localLogicalSessionTimeoutMinutes", Bson::Int32(30), false);
        add("logicalSessionRefreshMillis", Bson::Int32(300_000), false);
        add(
            "disableLogicalSessionCacheRefresh",
            Bson::Boolean(false),
            false,
        );
        add("maxSessions", Bson::Int32(1_000_000), false);
        // An open transaction older than this is aborted (`transaction_table`).
        add("transactionLifetimeLimitSeconds", Bson::Int32(60), true);
        add(
            "TransactionRecordMinimumLifetimeMinutes",
            Bson::Int32(30),
            false,
        );
        add(
            "internalQueryMaxBlockingSortMemoryUsageBytes",
            Bson::Int64(100 * 1024 * 1024),
            true,
        );
        add(
            "internalDocumentSourceGroupMaxMemoryBytes",
            Bson::Int64(100 * 1024 * 1024),
            true,
        );
        // The other blocking stages' bounds (`aggregate::MemoryLimits`). MongoDB 8.0 fixes
        // `$bucketAuto`'s at 100 MB; later releases name it as here.
        for name in [
            "internalDocumentSourceBucketAutoMaxMemoryBytes",
            "internalDocumentSourceSetWindowFieldsMaxMemoryBytes",
            "internalDocumentSourceDensifyMaxMemoryBytes",
            "internalQueryFacetMaxOutputDocSizeBytes",
        ] {
            add(name, Bson::Int64(100 * 1024 * 1024), true);
        }
        // The pipeline shape limits the query engine enforces (`aggregate::limits`, which
        // holds the values: one per process, as MongoDB's knobs are).
        add(
            "internalPipelineLengthLimit",
            Bson::Int32(crate::aggregate::limits::DEFAULT_PIPELINE_LENGTH_LIMIT as i32),
            true,
        );
        add(
            "internalMaxSubPipelineViewDepth",
            Bson::Int32(crate::aggregate::limits::DEFAULT_MAX_SUB_PIPELINE_DEPTH as i32),
            true,
        );
        // What one index build holds of its keys before spilling sorted runs (MongoDB's
        // default, in megabytes).
        add("maxIndexBuildMemoryUsageMegabytes", Bson::Int32(200), true);
        // Since 6.0 a blocking sort past the memory limit spills to disk unless told not to.
        add("allowDiskUseByDefault", Bson::Boolean(true), true);
        add("ttlMonitorEnabled", Bson::Boolean(true), true);
        add("ttlMonitorSleepSecs", Bson::Int32(60), false);
        // DDL locks (config server): how long a DDL waits for a conflicting one (MongoDB's
        // 5 minutes), and how long a lock holder outside the config server may go without
        // pinging before its locks can be taken over (the 15 minutes of MongoDB's distributed
        // locks).
        add("ddlLockTimeoutMillis", Bson::Int64(300_000), true);
        add("ddlLockLeaseMillis", Bson::Int64(900_000), false);
        // The pools of connections to other cluster nodes (see `rpc::PoolLimits`).
        add("ShardingTaskExecutorPoolMaxSize", Bson::Int32(64), false);
        add(
            "ShardingTaskExecutorPoolRefreshTimeoutMS",
            Bson::Int32(20_000),
            false,
        );
        add(
            "ShardingTaskExecutorPoolRefreshRequirementMS",
            Bson::Int32(60_000),
            false,
        );
        add(
            "ShardingTaskExecutorPoolHostTimeoutMS",
            Bson::Int32(300_000),
            false,
        );
        // How long a data node keeps the history that reads at a past cluster time need
        // (`datanode::storage::history`), at least 0 as in MongoDB.
        params.insert(
            "minSnapshotHistoryWindowInSeconds",
            Param {
                value: Bson::Int32(DEFAULT_SNAPSHOT_HISTORY_WINDOW_SECS),
                runtime: true,
                bounds: Some((0, i64::from(i32::MAX))),
            },
        );
        // The iteration counts new SCRAM credentials are salted with (`server::auth`), within
        // MongoDB's minimums.
        params.insert(
            "scramIterationCount",
            Param {
                value: Bson::Int32(10_000),
                runtime: true,
                bounds: Some((5_000, i64::from(i32::MAX))),
            },
        );
        params.insert(
            "scramSHA256IterationCount",
            Param {
                value: Bson::Int32(15_000),
                runtime: true,
                bounds: Some((4_096, i64::from(i32::MAX))),
            },
        );
        // The range deleter (`shard::migration::range_deleter`): how long a range a migration
        // took away waits before its deletion (for queries that may still read it), and the
        // deletion's batches; and the pace of a recipient's clone.
        for (name, value, min) in [
            ("orphanCleanupDelaySecs", 900, 0),
            ("rangeDeleterBatchSize", i32::MAX, 1),
            ("rangeDeleterBatchDelayMS", 20, 0),
            // A recipient's clone: documents per insert (0: a whole batch from the donor) and
            // the pause after each, which paces a migration against the shards' other work.
            ("migrateCloneInsertionBatchSize", 0, 0),
            ("migrateCloneInsertionBatchDelayMS", 0, 0),
        ] {
            params.insert(
                name,
                Param {
                    value: Bson::Int32(value),
                    runtime: true,
                    bounds: Some((min, i64::from(i32::MAX))),
                },
            );
        }
        // How often a router asks the config server whether users changed.
        params.insert(
            "userCacheInvalidationIntervalSecs",
            Param {
                value: Bson::Int32(30),
                runtime: true,
                bounds: Some((1, 86_400)),
            },
        );
        // Startup-only: the nesting incoming documents may have, within MongoDB's bounds.
        params.insert(
            "maxBSONDepth",
            Param {
                value: Bson::Int32(200),
                runtime: false,
                bounds: Some((21, 250)),
            },
        );
        // docgrid's own: what incoming messages may hold at once, and how long one may go
        // without progress (see `server::ingress`).
        params.insert(
            "ingressMessageMemoryLimitBytes",
            Param {
                value: Bson::Int64(super::ingress::default_message_memory_limit() as i64),
                runtime: false,
                bounds: Some((super::ingress::MIN_MESSAGE_MEMORY_LIMIT, i64::MAX)),
            },
        );
        params.insert(
            "ingressMessageStallTimeoutMillis",
            Param {
                value: Bson::Int64(super::ingress::DEFAULT_STALL_TIMEOUT_MS),
                runtime: false,
                bounds: Some((1, i64::MAX)),
            },
        );
        Parameters {
            params: RwLock::new(params),
            snapshot_history_window: Arc::new(AtomicU32::new(
                DEFAULT_SNAPSHOT_HISTORY_WINDOW_SECS as u32,
            )),
        }
    }

    /// The defaults overridden by startup values (`--setParameter name=value`), which may set
    /// parameters that cannot change at runtime.
    pub fn with_startup(values: &[(String, String)]) -> Result<Self> {
        let params = Parameters::new();
        {
            let mut map = params.params.write().expect("poisoned");
            for (name, text) in values {
                let param = map.get_mut(name.as_str()).ok_or_else(|| {
                    MongoError::new(
                        ErrorCode::InvalidOptions,
                        format!("Unknown --setParameter '{name}'"),
                    )
                })?;
                let converted = match &param.value {
                    Bson::Boolean(_) => match text.as_str() {
                        "1" | "true" => Some(Bson::Boolean(true)),
                        "0" | "false" => Some(Bson::Boolean(false)),
                        _ => None,
                    },
                    Bson::Int64(_) => text.parse().ok().map(Bson::Int64),
                    Bson::Int32(_) => text.parse().ok().map(Bson::Int32),
                    _ => None,
                };
                let converted = converted.ok_or_else(|| {
                    MongoError::bad_value(format!(
                        "Invalid value for --setParameter {name}: {text}"
                    ))
                })?;
                check_bounds(name, param, &converted)?;
                apply_to_engine(name, &converted)?;
                params.apply_to_storage(name, &converted);
                param.value = converted;
            }
        }
        Ok(params)
    }

    pub fn get(&self, name: &str) -> Option<Bson> {
        self.params
            .read()
            .expect("poisoned")
            .get(name)
            .map(|p| p.value.clone())
    }

    pub fn get_i64(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Bson::Int64(v) => Some(v),
            Bson::Int32(v) => Some(i64::from(v)),
            _ => None,
        }
    }

    pub fn get_bool(&self, name: &str) -> bool {
        matches!(self.get(name), Some(Bson::Boolean(true)))
    }

    /// What a pipeline's blocking stages may hold, from these parameters: `allow_disk_use` is
    /// the command's (`None`: `allowDiskUseByDefault`), `spill_dir` where a node spills (`None`
    /// on a router, which keeps no data: past a limit, its stages fail as they do without
    /// `allowDiskUse`).
    pub fn memory_limits(
        &self,
        allow_disk_use: Option<bool>,
        spill_dir: Option<std::path::PathBuf>,
    ) -> crate::aggregate::MemoryLimits {
        let bytes = |name: &str| self.get_i64(name).unwrap_or(100 * 1024 * 1024).max(0) as usize;
        crate::aggregate::MemoryLimits {
            max_sort_bytes: bytes("internalQueryMaxBlockingSortMemoryUsageBytes"),
            max_group_bytes: bytes("internalDocumentSourceGroupMaxMemoryBytes"),
            max_bucket_auto_bytes: bytes("internalDocumentSourceBucketAutoMaxMemoryBytes"),
            max_window_bytes: bytes("internalDocumentSourceSetWindowFieldsMaxMemoryBytes"),
            max_densify_bytes: bytes("internalDocumentSourceDensifyMaxMemoryBytes"),
            max_facet_output_bytes: bytes("internalQueryFacetMaxOutputDocSizeBytes"),
            allow_disk_use: allow_disk_use
                .unwrap_or_else(|| self.get_bool("allowDiskUseByDefault")),
            spill_dir,
        }
    }

    /// `getParameter: '*'`: every parameter with its value.
    pub fn all(&self, details: bool) -> Document {
        let params = self.params.read().expect("poisoned");
        params
            .iter()
            .map(|(k, p)| (k.to_string(), Self::render(p, details)))
            .collect()
    }

    /// A named parameter as `getParameter` shows it.
    pub fn describe(&self, name: &str, details: bool) -> Option<Bson> {
        self.params
            .read()
            .expect("poisoned")
            .get(name)
            .map(|p| Self::render(p, details))
    }

    fn render(p: &Param, details: bool) -> Bson {
        if details {
            Bson::Document(
                doc! {"value": p.value.clone(), "settableAtRuntime": p.runtime, "settableAtStartup": true},
            )
        } else {
            p.value.clone()
        }
    }

    /// Sets a runtime-settable parameter, returning the previous value; the new value must
    /// convert to the parameter's type.
    pub fn set(&self, name: &str, value: &Bson) -> Result<Bson> {
        let mut params = self.params.write().expect("poisoned");
        let param = params.get_mut(name).ok_or_else(|| {
            MongoError::new(
                ErrorCode::InvalidOptions,
                format!(
                    "attempted to set unrecognized parameter [{name}], use help:true to see options"
                ),
            )
        })?;
        if !param.runtime {
            return Err(MongoError::bad_value(format!(
                "not allowed to change [{name}] at runtime"
            )));
        }
        let converted = match (&param.value, value) {
            (Bson::Int64(_), v) => as_i64(v).map(Bson::Int64),
            (Bson::Int32(_), v) => as_i64(v)
                .and_then(|n| i32::try_from(n).ok())
                .map(Bson::Int32),
            (Bson::Boolean(_), Bson::Boolean(b)) => Some(Bson::Boolean(*b)),
            _ => None,
        };
        let converted = converted.ok_or_else(|| {
            MongoError::bad_value(format!("Invalid value for parameter {name}: {value}"))
        })?;
        check_bounds(name, param, &converted)?;
        apply_to_engine(name, &converted)?;
        self.apply_to_storage(name, &converted);
        Ok(std::mem::replace(&mut param.value, converted))
    }

    /// `minSnapshotHistoryWindowInSeconds` as storage reads it: pass it to
    /// `Storage::open_with_history_window`.
    pub fn snapshot_history_window(&self) -> Arc<AtomicU32> {
        self.snapshot_history_window.clone()
    }

    /// Hands storage a parameter it reads (already within its bounds).
    fn apply_to_storage(&self, name: &str, value: &Bson) {
        if name == "minSnapshotHistoryWindowInSeconds" {
            if let Some(secs) = as_i64(value).and_then(|n| u32::try_from(n).ok()) {
                self.snapshot_history_window.store(secs, Ordering::Relaxed);
            }
        }
    }
}

/// MongoDB's IDL bound check and message.
fn check_bounds(name: &str, param: &Param, value: &Bson) -> Result<()> {
    let (Some((low, high)), Some(n)) = (param.bounds, as_i64(value)) else {
        return Ok(());
    };
    let refused = |relation: &str, bound: i64| {
        MongoError::bad_value(format!(
            "Invalid value for parameter {name}: {n} is not {relation} {bound}"
        ))
    };
    if n < low {
        return Err(refused("greater than or equal to", low));
    }
    if n > high {
        return Err(refused("less than or equal to", high));
    }
    Ok(())
}

/// Hands the parameters the query engine reads (`aggregate::limits`) their new value, which
/// must be positive (MongoDB's validator).
fn apply_to_engine(name: &str, value: &Bson) -> Result<()> {
    let set: fn(usize) = match name {
        "internalPipelineLengthLimit" => crate::aggregate::limits::set_pipeline_length_limit,
        "internalMaxSubPipelineViewDepth" => crate::aggregate::limits::set_max_sub_pipeline_depth,
        _ => return Ok(()),
    };
    match as_i64(value).and_then(|n| usize::try_from(n).ok()) {
        Some(n) if n > 0 => {
            set(n);
            Ok(())
        }
        _ => Err(MongoError::bad_value(format!(
            "Invalid value for parameter {name}: {value} is not greater than 0"
        ))),
    }
}

fn as_i64(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(f) if f.fract() == 0.0 => Some(*f as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_parameters_convert_and_others_refuse() {
        let p = Parameters::new();
        assert_eq!(
            p.set("cursorTimeoutMillis", &Bson::Int32(5)).unwrap(),
            Bson::Int64(600_000)
        );
        assert_eq!(p.get_i64("cursorTimeoutMillis"), Some(5));
        assert!(p.set("enableTestCommands", &Bson::Boolean(true)).is_err());
        // Storage sees the snapshot history window change in place; negative is refused.
        let window = p.snapshot_history_window();
        p.set("minSnapshotHistoryWindowInSeconds", &Bson::Int32(5))
            .unwrap();
        assert_eq!(window.load(Ordering::Relaxed), 5);
        assert!(
            p.set("minSnapshotHistoryWindowInSeconds", &Bson::Int32(-1))
                .is_err()
        );
        assert_eq!(window.load(Ordering::Relaxed), 5);
        assert_eq!(
            p.set("nope", &Bson::Int32(1)).unwrap_err().code(),
            ErrorCode::InvalidOptions
        );
    }

    #[test]
    fn pipeline_limits_are_positive() {
        // Only refusals here: an accepted value would change the process-wide limit under the
        // other tests.
        let p = Parameters::new();
        assert_eq!(p.get_i64("internalPipelineLengthLimit"), Some(1000));
        assert_eq!(p.get_i64("internalMaxSubPipelineViewDepth"), Some(20));
        for name in [
            "internalPipelineLengthLimit",
            "internalMaxSubPipelineViewDepth",
        ] {
            let err = p.set(name, &Bson::Int32(0)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::BadValue);
        }
        assert_eq!(p.get_i64("internalPipelineLengthLimit"), Some(1000));
    }
}

impl Default for Parameters {
    fn default() -> Self {
        Parameters::new()
    }
}

#[cfg(test)]
mod startup_tests {
    use super::*;

    #[test]
    fn startup_values_set_even_startup_only_parameters() {
        let p = Parameters::with_startup(&[
            ("enableTestCommands".into(), "1".into()),
            ("cursorTimeoutMillis".into(), "5".into()),
        ])
        .unwrap();
        assert!(p.get_bool("enableTestCommands"));
        assert_eq!(p.get_i64("cursorTimeoutMillis"), Some(5));
        assert!(Parameters::with_startup(&[("nope".into(), "1".into())]).is_err());
        assert!(
            Parameters::with_startup(&[("enableTestCommands".into(), "maybe".into())]).is_err()
        );
    }

    #[test]
    fn bounded_parameters_refuse_values_outside_mongodbs_range() {
        let refusal = |value: &str| {
            Parameters::with_startup(&[("maxBSONDepth".into(), value.into())])
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            refusal("251"),
            "Invalid value for parameter maxBSONDepth: 251 is not less than or equal to 250"
        );
        assert_eq!(
            refusal("20"),
            "Invalid value for parameter maxBSONDepth: 20 is not greater than or equal to 21"
        );
        let p = Parameters::with_startup(&[("maxBSONDepth".into(), "21".into())]).unwrap();
        let window =
            Parameters::with_startup(&[("minSnapshotHistoryWindowInSeconds".into(), "7".into())])
                .unwrap()
                .snapshot_history_window();
        assert_eq!(window.load(Ordering::Relaxed), 7);
        assert_eq!(p.get_i64("maxBSONDepth"), Some(21));
        assert!(
            Parameters::with_startup(&[("ingressMessageMemoryLimitBytes".into(), "1000".into())])
                .is_err()
        );
    }
}
