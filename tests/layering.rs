//! The module layering of `src/`: every top-level module uses only the layers before it, the
//! roles never use one another, and the top-level module graph has no cycle.
//!
//! The rule, as checked here: a reference is `crate::<top>` (also inside `use crate::{a, b}`)
//! in the code of a top-level module of `src/` (`src/<top>.rs` or any file under `src/<top>/`),
//! tests included — `#[cfg(test)]` code follows the same layers as the code it tests. Comments
//! (doc comments too) and string literals are not code. A module may refer only to modules of
//! an earlier layer in [`LAYERS`]; a role (`shard`, `configsvr`, `router`) never refers to
//! another role, except for the edges in [`ALLOWED`]; and, whatever the declared order, a cycle
//! among top-level modules fails with the cycle printed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first; each may use only the layers before it. One layer may hold
/// several modules that do not use one another (the roles).
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["depth"],
    &["document"],
    &["wire"],
    &["expression"],
    &["query"],
    &["catalog"],
    &["spill"],
    &["command"],
    &["aggregate"],
    &["update"],
    &["server"],
    &["rpc"],
    // Not a role: the node's storage, execution and commands, which shard and configsvr share.
    &["datanode"],
    &["shard", "configsvr", "router"],
    &["cluster"],
];

/// The roles: processes of the cluster, which reach one another only through `rpc`.
const ROLES: &[&str] = &["shard", "configsvr", "router"];

/// Edges the rules would refuse that are tolerated for now, each with its reason.
const ALLOWED: &[(&str, &str, &str)] = &[(
    "configsvr",
    "shard",
    // The config server runs the shard's storage and commands for its own collections.
    "removed when datanode lands",
)];

/// Where each edge comes from: `file:line` of its references.
type Edges = BTreeMap<(String, String), Vec<String>>;

/// The first few places of an edge.
fn shown(places: &[String]) -> String {
    match places.len() {
        0..=3 => places.join(", "),
        n => format!("{} and {} more", places[..3].join(", "), n - 3),
    }
}

#[test]
fn modules_form_layers_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let tops = top_level_modules(&src);
    let edges = references(&src, &tops);
    let mut failures = Vec::new();

    let rank = |module: &str| LAYERS.iter().position(|layer| layer.contains(&module));
    for top in &tops {
        if rank(top).is_none() {
            failures.push(format!(
                "src/{top} is in no layer: add it to LAYERS in tests/layering.rs"
            ));
        }
    }
    for ((from, to), places) in &edges {
        let allowed = ALLOWED.iter().any(|(a, b, _)| a == from && b == to);
        let (Some(from_rank), Some(to_rank)) = (rank(from), rank(to)) else {
            continue;
        };
        let problem = if ROLES.contains(&from.as_str()) && ROLES.contains(&to.as_str()) {
            Some("a role uses another role")
        } else if to_rank >= from_rank {
            Some("a layer uses a layer that is not before it")
        } else {
            None
        };
        match problem {
            Some(problem) if allowed => {
                eprintln!("allowed: {from} -> {to} ({problem}): {}", shown(places))
            }
            Some(problem) => {
                failures.push(format!("{problem}: {from} -> {to} at {}", shown(places)))
            }
            None => {}
        }
    }
    for (component, cycle) in cycles(&tops, &edges) {
        let path = cycle
            .iter()
            .chain(cycle.first())
            .cloned()
            .collect::<Vec<_>>()
            .join(" -> ");
        let mut detail = Vec::new();
        for pair in cycle.iter().zip(cycle.iter().cycle().skip(1)) {
            let places = &edges[&(pair.0.clone(), pair.1.clone())];
            detail.push(format!("  {} -> {} at {}", pair.0, pair.1, shown(places)));
        }
        let members = component.into_iter().collect::<Vec<_>>().join(", ");
        failures.push(format!(
            "cycle {path} (the modules {members} all reach one another)\n{}",
            detail.join("\n")
        ));
    }
    assert!(
        failures.is_empty(),
        "module layering broken:\n{}",
        failures.join("\n")
    );
}

/// The rule catches what it should, on made-up sources.
#[test]
fn references_are_read_from_code_only() {
    let tops: BTreeSet<String> = ["query", "aggregate", "update", "expression"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let code = r##"
        //! Uses [`crate::update`] in a comment only.
        use crate::{expression::Expression, aggregate};
        /* crate::update in a block /* nested */ comment */
        let s = "crate::update in a string";
        let r = r#"crate::update in a raw string"#;
        let c = '"'; let l: &'static str = "x";
        fn f() { crate::query::sort::x(); }
    "##;
    let found: BTreeSet<String> = crate_references(&strip(code), &tops)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let expected: BTreeSet<String> = ["expression", "aggregate", "query"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, expected);

    let edges: Edges = [
        ("query", "aggregate"),
        ("aggregate", "update"),
        ("update", "query"),
    ]
    .iter()
    .map(|(a, b)| ((a.to_string(), b.to_string()), vec![]))
    .collect();
    let found = cycles(&tops, &edges);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].0.len(), found[0].1.len()), (3, 3));
}

/// `src/<name>.rs` and `src/<name>/`, without the crate roots.
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    let mut tops = BTreeSet::new();
    for entry in fs::read_dir(src).expect("src/ is readable") {
        let path = entry.expect("src/ is readable").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let source =
            path.extension().is_some_and(|e| e == "rs") && !["lib", "main"].contains(&name);
        if path.is_dir() || source {
            tops.insert(name.to_string());
        }
    }
    tops
}

/// Every top-level module's references to other top-level modules, with their places.
fn references(src: &Path, tops: &BTreeSet<String>) -> Edges {
    let mut edges = Edges::new();
    for top in tops {
        let mut files = Vec::new();
        let file = src.join(format!("{top}.rs"));
        if file.is_file() {
            files.push(file);
        }
        rust_files(&src.join(top), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).expect("source is readable");
            let shown = file
                .strip_prefix(src.parent().unwrap_or(src))
                .unwrap_or(&file)
                .display()
                .to_string();
            for (to, line) in crate_references(&strip(&text), tops) {
                if &to != top {
                    edges
                        .entry((top.clone(), to))
                        .or_default()
                        .push(format!("{shown}:{line}"));
                }
            }
        }
    }
    edges
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments and string and character literals blanked out (newlines kept, so
/// that line numbers still hold).
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char, out: &mut String| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(chars[i], &mut out);
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(next, Some('"') | Some('#'))
            && !chars[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&other) => {
                        blank(other, &mut out);
                        j += 1;
                    }
                }
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&skipped) = chars.get(i) {
                    blank(skipped, &mut out);
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or else a lifetime.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The top-level modules `crate::<name>` names in stripped code, with their line numbers.
fn crate_references(code: &str, tops: &BTreeSet<String>) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().last();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let names: Vec<&str> = if let Some(group) = rest.trim_start().strip_prefix('{') {
                // `crate::{a::x, b}`: the first segment of each item at the top of the group
                // (a group spanning lines is read on its first line only).
                let mut depth = 0;
                let mut items = Vec::new();
                let mut start = 0;
                for (k, ch) in group.char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            items.push(&group[start..k]);
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(&group[start..k]);
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                items
            } else {
                vec![rest]
            };
            for name in names {
                let ident: String = name
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if tops.contains(&ident) {
                    found.push((ident, index + 1));
                }
            }
        }
    }
    found
}

/// The cycles of the module graph: one per strongly connected component of more than one
/// module (or a module that refers to itself): the component, and a shortest cycle through its
/// first module.
fn cycles(tops: &BTreeSet<String>, edges: &Edges) -> Vec<(BTreeSet<String>, Vec<String>)> {
    let next = |from: &str| -> Vec<String> {
        edges
            .keys()
            .filter(|(a, _)| a == from)
            .map(|(_, b)| b.clone())
            .collect()
    };
    let reaches = |from: &str, to: &str| -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(at) = stack.pop() {
            for n in next(&at) {
                if n == to {
                    return true;
                }
                if seen.insert(n.clone()) {
                    stack.push(n);
                }
            }
        }
        false
    };
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    let mut all: BTreeSet<String> = tops.clone();
    all.extend(edges.keys().flat_map(|(a, b)| [a.clone(), b.clone()]));
    for start in &all {
        if done.contains(start) || !reaches(start, start) {
            continue;
        }
        let component: BTreeSet<String> = all
            .iter()
            .filter(|m| *m == start || (reaches(start, m) && reaches(m, start)))
            .cloned()
            .collect();
        done.extend(component.iter().cloned());
        // A shortest path back to the start, within the component.
        let mut previous: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.clone()]);
        let mut last = None;
        'search: while let Some(at) = queue.pop_front() {
            for n in next(&at) {
                if !component.contains(&n) {
                    continue;
                }
                if &n == start {
                    last = Some(at.clone());
                    break 'search;
                }
                if !previous.contains_key(&n) {
                    previous.insert(n.clone(), at.clone());
                    queue.push_back(n);
                }
            }
        }
        let mut path = Vec::new();
        let mut at = last;
        while let Some(module) = at {
            at = previous.get(&module).cloned();
            path.push(module.clone());
            if &module == start {
                break;
            }
        }
        path.reverse();
        if path.first() != Some(start) {
            path.insert(0, start.clone());
        }
        found.push((component, path));
    }
    found
}
