//! `expectations.toml`, the single list of tests known to fail against docgrid: judging a file's
//! results against it (an unlisted failure fails the file, and so does a listed test that now
//! passes, so the list only shrinks), checking that every entry still names a real test, and
//! writing a draft list from a real run (`DOCGRID_UNIFIED_RECORD=1`).

use crate::summary::{FileReport, TestOutcome};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub file: String,
    pub test: String,
    pub reason: String,
    /// The issue that will fix it: a number, or "none" (not scheduled yet).
    pub issue: toml::Value,
}

impl Entry {
    pub fn issue_label(&self) -> String {
        match &self.issue {
            toml::Value::Integer(n) => format!("issue {n}"),
            toml::Value::String(s) if s == "none" => "none (not scheduled yet)".to_string(),
            toml::Value::String(s) => format!("issue {s}"),
            other => format!("issue {other}"),
        }
    }
}

#[derive(Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ListFile {
    #[serde(default)]
    expected_failure: Vec<Entry>,
}

#[derive(Default)]
pub struct Expectations {
    entries: Vec<Entry>,
    index: HashMap<(String, String), usize>,
}

impl Expectations {
    pub fn load(path: &Path) -> Result<Expectations, String> {
        let list: ListFile = match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ListFile::default(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let mut index = HashMap::new();
        for (i, entry) in list.expected_failure.iter().enumerate() {
            if index
                .insert((entry.file.clone(), entry.test.clone()), i)
                .is_some()
            {
                return Err(format!(
                    "{}: duplicate entry {} / {}",
                    path.display(),
                    entry.file,
                    entry.test
                ));
            }
        }
        Ok(Expectations {
            entries: list.expected_failure,
            index,
        })
    }

    pub fn entry(&self, file: &str, test: &str) -> Option<&Entry> {
        self.index
            .get(&(file.to_string(), test.to_string()))
            .map(|&i| &self.entries[i])
    }

    /// Ok when every failure of the file is listed and every listed test of it failed.
    pub fn judge(&self, report: &FileReport) -> Result<(), String> {
        if let Some(e) = &report.file_error {
            return Err(format!("{}: {e}", report.name));
        }
        let mut problems = Vec::new();
        for test in &report.tests {
            let listed = self.entry(&report.name, &test.description);
            match (&test.outcome, listed) {
                (TestOutcome::Failed(msg), None) => problems.push(format!(
                    "FAILED (not in expectations.toml): {}\n    {msg}",
                    test.description
                )),
                (TestOutcome::Passed, Some(_)) => problems.push(format!(
                    "PASSES now, remove it from expectations.toml: {}",
                    test.description
                )),
                (
                    TestOutcome::SkippedRequirement(r) | TestOutcome::SkippedUnsupported(r),
                    Some(_),
                ) => problems.push(format!(
                    "SKIPPED ({r}) but listed in expectations.toml: {}",
                    test.description
                )),
                _ => {}
            }
        }
        for entry in self.entries.iter().filter(|e| e.file == report.name) {
            if !report.tests.iter().any(|t| t.description == entry.test) {
                problems.push(format!(
                    "expectations.toml names a test this file does not have: {}",
                    entry.test
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("{}:\n  {}", report.name, problems.join("\n  ")))
        }
    }

    /// Every entry must name an existing file (and, through `judge`, an existing test).
    pub fn check_entries_exist(&self, files: &[(String, PathBuf)]) -> Result<(), String> {
        let known: HashMap<&str, &PathBuf> = files.iter().map(|(n, p)| (n.as_str(), p)).collect();
        let mut missing = Vec::new();
        let mut descriptions: HashMap<&str, Vec<String>> = HashMap::new();
        for entry in &self.entries {
            let Some(path) = known.get(entry.file.as_str()) else {
                missing.push(format!("no file {}", entry.file));
                continue;
            };
            let tests = descriptions.entry(entry.file.as_str()).or_insert_with(|| {
                crate::values::load_file(path)
                    .ok()
                    .and_then(|d| d.get_array("tests").ok().cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|t| t.as_document()?.get_str("description").ok())
                    .map(String::from)
                    .collect()
            });
            if !tests.contains(&entry.test) {
                missing.push(format!("no test {:?} in {}", entry.test, entry.file));
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "expectations.toml entries that match nothing:\n  {}",
                missing.join("\n  ")
            ))
        }
    }

    /// Writes every failure of this run as a draft list: entries already listed keep their
    /// reason and issue, new ones get a proposed classification (or the first error line), and
    /// entries of files this run did not execute are carried over unchanged.
    pub fn write_draft(&self, reports: &[FileReport], path: &Path) -> Result<usize, String> {
        let ran: HashMap<&str, ()> = reports.iter().map(|r| (r.name.as_str(), ())).collect();
        let mut entries: Vec<Entry> = self
            .entries
            .iter()
            .filter(|e| !ran.contains_key(e.file.as_str()))
            .cloned()
            .collect();
        let mut recorded = 0;
        for report in reports {
            for test in &report.tests {
                let TestOutcome::Failed(message) = &test.outcome else {
                    continue;
                };
                recorded += 1;
                let entry = match self.entry(&report.name, &test.description) {
                    Some(e) => e.clone(),
                    None => {
                        let (reason, issue) = classify(&report.name, &test.description, message);
                        Entry {
                            file: report.name.clone(),
                            test: test.description.clone(),
                            reason,
                            issue,
                        }
                    }
                };
                entries.push(entry);
            }
        }
        entries.sort_by(|a, b| (&a.file, &a.test).cmp(&(&b.file, &b.test)));
        let mut by_file: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
        for e in &entries {
            by_file.entry(e.file.as_str()).or_default().push(e);
        }
        let mut out = String::from(
            "# Tests of the unified spec runner known to fail against docgrid, one entry per test.\n\
             # The runner fails when a test fails that is not listed here, and when a listed test\n\
             # passes. Regenerate from a real run with\n\
             #   DOCGRID_UNIFIED_RECORD=1 cargo test --test unified\n\
             # (draft in target/unified-expectations.draft.toml), review, and copy it here.\n",
        );
        for (file, list) in by_file {
            out.push_str(&format!("\n# {file}\n"));
            for e in list {
                out.push_str("[[expected_failure]]\n");
                out.push_str(&format!("file = {}\n", toml_string(&e.file)));
                out.push_str(&format!("test = {}\n", toml_string(&e.test)));
                out.push_str(&format!("reason = {}\n", toml_string(&e.reason)));
                out.push_str(&format!("issue = {}\n", e.issue));
            }
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(recorded)
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Proposes a reason and issue for a new failure from `file | test | message`; unknown failures
/// keep their first line and `issue = "none"` for a person to classify.
pub fn classify(file: &str, test: &str, message: &str) -> (String, toml::Value) {
    let subject = format!("{file} | {test} | {message}");
    for (needle, reason, issue) in crate::classify::RULES {
        if subject.contains(needle) {
            let issue = match issue.parse::<i64>() {
                Ok(n) => toml::Value::Integer(n),
                Err(_) => toml::Value::String(issue.to_string()),
            };
            return (reason.to_string(), issue);
        }
    }
    let first = message.lines().next().unwrap_or_default();
    let mut cut = first.to_string();
    if cut.len() > 300 {
        let mut end = 300;
        while !cut.is_char_boundary(end) {
            end -= 1;
        }
        cut.truncate(end);
    }
    (cut, toml::Value::String("none".into()))
}
