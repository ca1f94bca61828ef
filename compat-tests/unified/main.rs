//! MongoDB's Unified Test Format runner: every driver specification test file under
//! `../shared/compat-data/unified-spec/unified/<area>/` is one test case (`crud/insertOne`), run
//! through the official Rust driver against one in-process docgrid cluster, judged against
//! `expectations.toml`, and summarised per area at the end (`target/unified-summary.json`).

#[path = "../harness.rs"]
// Shared with the compat tests; this target uses only `TestCluster`.
#[allow(unused)]
mod harness;

mod classify;
mod entities;
mod events;
mod expectations;
mod matching;
mod operations;
mod requirements;
mod runner;
mod selfcheck;
mod summary;
mod values;

use expectations::Expectations;
use harness::TestCluster;
use libtest_mimic::{Arguments, Failed, Trial};
use mongodb::Client;
use requirements::ServerInfo;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use summary::{FileReport, Summary};

/// Everything the files share: one runtime, one cluster, one internal client, the server facts
/// requirements are evaluated against.
pub struct Global {
    pub rt: tokio::runtime::Runtime,
    pub cluster: TestCluster,
    pub internal: Client,
    pub server: ServerInfo,
}

static GLOBAL: OnceLock<Result<Global, String>> = OnceLock::new();

/// Started on first use so that `--list` and fully filtered runs start no cluster.
fn global() -> Result<&'static Global, String> {
    GLOBAL
        .get_or_init(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| format!("tokio runtime: {e}"))?;
            let (cluster, internal, server) = rt.block_on(async {
                let cluster = TestCluster::with_test_commands().await;
                let internal = cluster.client.clone();
                let server = ServerInfo::discover(&internal).await?;
                Ok::<_, String>((cluster, internal, server))
            })?;
            Ok(Global {
                rt,
                cluster,
                internal,
                server,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/compat-data/unified-spec/unified")
}

fn expectations_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("compat-tests/unified/expectations.toml")
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

/// `(area/stem, path)` for every JSON file, sorted so the run order is stable.
fn discover(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    let Ok(areas) = std::fs::read_dir(dir) else {
        return files;
    };
    for area in areas.flatten() {
        let area_path = area.path();
        if !area_path.is_dir() {
            continue;
        }
        let area_name = area.file_name().to_string_lossy().into_owned();
        let Ok(entries) = std::fs::read_dir(&area_path) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((format!("{area_name}/{stem}"), path));
        }
    }
    files.sort();
    files
}

fn record_mode() -> bool {
    std::env::var("DOCGRID_UNIFIED_RECORD").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn main() {
    let mut args = Arguments::from_args();
    // The files share database and collection names: they must run one after another.
    args.test_threads = Some(1);

    let dir = data_dir();
    if !dir.is_dir() {
        println!(
            "unified spec data is absent ({}): nothing to run, passing",
            dir.display()
        );
        return;
    }

    let expectations = match Expectations::load(&expectations_path()) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(101);
        }
    };
    let record = record_mode();
    let reports: Arc<Mutex<Vec<FileReport>>> = Arc::default();
    let files = discover(&dir);

    let mut trials = vec![Trial::test("runner-self-check", || {
        selfcheck::run().map_err(Failed::from)
    })];
    {
        // The list itself is checked: every entry must name a file and a test that exist.
        let expectations = expectations.clone();
        let files = files.clone();
        trials.push(Trial::test("expectations-file", move || {
            expectations
                .check_entries_exist(&files)
                .map_err(Failed::from)
        }));
    }
    for (name, path) in files {
        let expectations = expectations.clone();
        let reports = reports.clone();
        trials.push(Trial::test(name.clone(), move || {
            let global = global().map_err(|e| format!("cluster did not start: {e}"))?;
            let report = global.rt.block_on(runner::run_file(global, &name, &path));
            let verdict = expectations.judge(&report);
            let failed = verdict.is_err();
            reports
                .lock()
                .map_err(|_| "report list poisoned")?
                .push(report);
            if record && failed {
                // Recording collects every failure; the list is rewritten from the draft.
                return Ok(());
            }
            verdict.map_err(Failed::from)
        }));
    }

    let conclusion = libtest_mimic::run(&args, trials);

    let reports = reports.lock().map(|r| r.clone()).unwrap_or_default();
    if !reports.is_empty() {
        let summary = Summary::build(&reports, &expectations);
        summary.print();
        if let Err(e) = summary.write_json(&target_dir().join("unified-summary.json")) {
            eprintln!("could not write the summary: {e}");
        }
        if record {
            let draft = target_dir().join("unified-expectations.draft.toml");
            match expectations.write_draft(&reports, &draft) {
                Ok(n) => println!("recorded {n} failing tests in {}", draft.display()),
                Err(e) => eprintln!("could not write the draft: {e}"),
            }
        }
    }
    conclusion.exit();
}
