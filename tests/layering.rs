//! The module layering of `src/`: every top-level module uses only the layers before it, the
//! roles never use one another, and the top-level module graph has no cycle.
//!
//! The rule, as checked here: a reference is a path that reaches a top-level module —
//! `crate::<top>` (`$crate::<top>` in macros), every module of a `use crate::{a, b::c}` group, or
//! a `super::` chain climbing out of the module it is written in — in the code of a top-level
//! module of `src/` (`src/<top>.rs` or any file under `src/<top>/`), tests included:
//! `#[cfg(test)]` code follows the same layers as the code it tests. Files are read with Rust's
//! tokenizer (`proc-macro2`), so comments and literals never count. A module may refer only to
//! modules of an earlier layer in [`LAYERS`]; a role (`shard`, `configsvr`, `router`) never
//! refers to another role; and, whatever the declared order, a cycle among top-level modules
//! fails with the cycle printed. And every file opens with a `//!` line saying what it owns.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
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
        if let Some(problem) = problem {
            failures.push(format!("{problem}: {from} -> {to} at {}", shown(places)));
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

/// Every file of `src/` opens with a `//!` line saying what it owns.
#[test]
fn every_module_says_what_it_owns() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let silent: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = fs::read_to_string(file).expect("source is readable");
            !text.trim_start().starts_with("//!")
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        silent.is_empty(),
        "files without an opening `//!` line:\n{}",
        silent.join("\n")
    );
}

/// The rule catches what it should, on made-up sources.
#[test]
fn references_are_read_from_code_only() {
    let tops: BTreeSet<String> = [
        "query",
        "aggregate",
        "update",
        "expression",
        "spill",
        "wire",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let code = r##"
        //! Uses [`crate::update`] in a comment only.
        use crate::{expression::Expression, aggregate};
        use crate::{
            spill::Sort,
            document::{a, b},
        };
        /* crate::update in a block /* nested */ comment */
        let s = "crate::update in a string";
        let r = r#"crate::update in a raw string"#;
        let c = '"'; let l: &'static str = "x";
        fn f() { crate::query::sort::x(); }
        mod tests {
            use super::super::super::wire::Frame;
            use super::super::update;
        }
    "##;
    // Written in `src/<top>/x.rs`: two `super`s reach the crate root, three from `mod tests`
    // (whose `super::super::update` is `<top>::update`, no top-level module).
    let found: BTreeSet<String> = crate_references(code, 2, &tops)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let expected: BTreeSet<String> = ["expression", "aggregate", "spill", "query", "wire"]
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
            for (to, line) in crate_references(&text, module_depth(src, &file), tops) {
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

/// How many modules deep a file's code is: 1 in `src/a.rs` and `src/a/mod.rs`, 2 in
/// `src/a/b.rs`, ...; one `super` less reaches the crate root.
fn module_depth(src: &Path, file: &Path) -> usize {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let parts = relative.components().count();
    if relative.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The top-level modules a file's code refers to, with their line numbers; `depth` is how many
/// modules deep the file is ([`module_depth`]).
fn crate_references(source: &str, depth: usize, tops: &BTreeSet<String>) -> Vec<(String, usize)> {
    let tokens: TokenStream = source
        .parse()
        .unwrap_or_else(|e| panic!("not Rust source: {e:?}"));
    let mut found = Vec::new();
    walk(tokens, depth, tops, &mut found);
    found
}

fn walk(
    tokens: TokenStream,
    depth: usize,
    tops: &BTreeSet<String>,
    found: &mut Vec<(String, usize)>,
) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let is = |i: usize, word: &str| matches!(tokens.get(i), Some(TokenTree::Ident(x)) if x == word);
    let path_sep = |i: usize| {
        matches!((tokens.get(i), tokens.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
    };
    let record = |token: Option<&TokenTree>, found: &mut Vec<(String, usize)>| match token {
        Some(TokenTree::Ident(name)) if tops.contains(&name.to_string()) => {
            found.push((name.to_string(), name.span().start().line));
        }
        // `crate::{a::x, b}`: the first name of every item of the group.
        Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
            let mut item_start = true;
            for token in group.stream() {
                match &token {
                    TokenTree::Ident(name) if item_start => {
                        if tops.contains(&name.to_string()) {
                            found.push((name.to_string(), name.span().start().line));
                        }
                        item_start = false;
                    }
                    TokenTree::Punct(p) if p.as_char() == ',' => item_start = true,
                    _ => item_start = false,
                }
            }
        }
        _ => {}
    };
    let mut i = 0;
    while i < tokens.len() {
        if is(i, "crate") && path_sep(i + 1) {
            record(tokens.get(i + 3), found);
        } else if is(i, "super") && !(i >= 2 && path_sep(i - 2)) {
            // A chain `super::super::...`: as many as the module is deep reach the crate root.
            let mut climbed = 1;
            while path_sep(i + 3 * climbed - 2) && is(i + 3 * climbed, "super") {
                climbed += 1;
            }
            if climbed == depth && path_sep(i + 3 * climbed - 2) {
                record(tokens.get(i + 3 * climbed), found);
            }
        } else if is(i, "mod")
            && let (Some(TokenTree::Ident(_)), Some(TokenTree::Group(body))) =
                (tokens.get(i + 1), tokens.get(i + 2))
            && body.delimiter() == Delimiter::Brace
        {
            // An inline module is one level deeper.
            walk(body.stream(), depth + 1, tops, found);
            i += 3;
            continue;
        }
        if let TokenTree::Group(group) = &tokens[i] {
            walk(group.stream(), depth, tops, found);
        }
        i += 1;
    }
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
