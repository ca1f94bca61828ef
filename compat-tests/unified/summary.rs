//! What a run found: per-test outcomes of each file, and the per-area table printed at the end
//! and written to `target/unified-summary.json` (the source of COMPATIBILITY.md's section).

use crate::expectations::Expectations;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug)]
pub enum TestOutcome {
    Passed,
    Failed(String),
    /// `runOnRequirements` (or the file's own `skipReason`) exclude this server.
    SkippedRequirement(String),
    /// The test needs something the Rust driver cannot express (or GridFS).
    SkippedUnsupported(String),
}

#[derive(Clone, Debug)]
pub struct TestReport {
    pub description: String,
    pub outcome: TestOutcome,
}

#[derive(Clone, Debug)]
pub struct FileReport {
    pub name: String,
    pub area: String,
    pub tests: Vec<TestReport>,
    /// The file could not be run at all (unreadable, unsupported schema version).
    pub file_error: Option<String>,
}

#[derive(Default, Clone)]
struct Row {
    files: usize,
    tests: usize,
    passed: usize,
    expected_failures: usize,
    unexpected_failures: usize,
    unexpected_passes: usize,
    skipped_requirement: usize,
    skipped_unsupported: usize,
}

pub struct Summary {
    rows: BTreeMap<String, Row>,
    unsupported: BTreeMap<String, usize>,
    by_issue: BTreeMap<String, usize>,
}

impl Summary {
    pub fn build(reports: &[FileReport], expectations: &Expectations) -> Summary {
        let mut rows: BTreeMap<String, Row> = BTreeMap::new();
        let mut unsupported = BTreeMap::new();
        let mut by_issue = BTreeMap::new();
        for file in reports {
            let row = rows.entry(file.area.clone()).or_default();
            row.files += 1;
            if file.file_error.is_some() {
                row.unexpected_failures += 1;
            }
            for test in &file.tests {
                row.tests += 1;
                let listed = expectations.entry(&file.name, &test.description);
                match (&test.outcome, listed) {
                    (TestOutcome::Passed, None) => row.passed += 1,
                    (TestOutcome::Passed, Some(_)) => row.unexpected_passes += 1,
                    (TestOutcome::Failed(_), Some(entry)) => {
                        row.expected_failures += 1;
                        *by_issue.entry(entry.issue_label()).or_insert(0) += 1;
                    }
                    (TestOutcome::Failed(_), None) => row.unexpected_failures += 1,
                    (TestOutcome::SkippedRequirement(_), _) => row.skipped_requirement += 1,
                    (TestOutcome::SkippedUnsupported(reason), _) => {
                        row.skipped_unsupported += 1;
                        *unsupported.entry(reason.clone()).or_insert(0) += 1;
                    }
                }
            }
        }
        Summary {
            rows,
            unsupported,
            by_issue,
        }
    }

    fn total(&self) -> Row {
        let mut t = Row::default();
        for r in self.rows.values() {
            t.files += r.files;
            t.tests += r.tests;
            t.passed += r.passed;
            t.expected_failures += r.expected_failures;
            t.unexpected_failures += r.unexpected_failures;
            t.unexpected_passes += r.unexpected_passes;
            t.skipped_requirement += r.skipped_requirement;
            t.skipped_unsupported += r.skipped_unsupported;
        }
        t
    }

    pub fn print(&self) {
        println!();
        println!("Unified test format summary (per area)");
        println!(
            "{:<44} {:>5} {:>6} {:>6} {:>8} {:>10} {:>8} {:>8}",
            "area", "files", "tests", "passed", "expected", "unexpected", "skip-req", "skip-uns"
        );
        let line = |name: &str, r: &Row| {
            println!(
                "{:<44} {:>5} {:>6} {:>6} {:>8} {:>10} {:>8} {:>8}",
                name,
                r.files,
                r.tests,
                r.passed,
                r.expected_failures,
                r.unexpected_failures + r.unexpected_passes,
                r.skipped_requirement,
                r.skipped_unsupported
            );
        };
        for (area, r) in &self.rows {
            line(area, r);
        }
        line("TOTAL", &self.total());
        if !self.by_issue.is_empty() {
            println!("expected failures by issue:");
            for (issue, n) in &self.by_issue {
                println!("  {n:>5}  {issue}");
            }
        }
        if !self.unsupported.is_empty() {
            println!("skipped as unsupported by the driver or runner:");
            for (reason, n) in &self.unsupported {
                println!("  {n:>5}  {reason}");
            }
        }
    }

    pub fn write_json(&self, path: &Path) -> Result<(), String> {
        let row = |r: &Row| {
            json!({
                "files": r.files,
                "tests": r.tests,
                "passed": r.passed,
                "expected_failures": r.expected_failures,
                "unexpected_failures": r.unexpected_failures,
                "unexpected_passes": r.unexpected_passes,
                "skipped_requirement": r.skipped_requirement,
                "skipped_unsupported": r.skipped_unsupported,
            })
        };
        let areas: serde_json::Map<String, serde_json::Value> =
            self.rows.iter().map(|(a, r)| (a.clone(), row(r))).collect();
        let value = json!({
            "areas": areas,
            "total": row(&self.total()),
            "expected_failures_by_issue": self.by_issue,
            "skipped_unsupported_reasons": self.unsupported,
        });
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }
}
