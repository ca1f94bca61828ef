//! The graph of a database's views, as MongoDB checks it when a view is created: each view
//! points at every namespace it reads — its `viewOn` and what its pipeline's `$lookup`,
//! `$graphLookup`, `$unionWith` and `$facet` read, however nested. A new view must not close a
//! cycle (GraphContainsCycle), and the longest chain of views through it must stay within
//! [`MAX_VIEW_DEPTH`] (ViewDepthLimitExceeded): reading a view runs the pipelines it reaches
//! one inside another, so both would otherwise recurse without end or past MongoDB's limit.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use std::collections::{HashMap, HashSet};

/// Most views one chain may hold, as MongoDB allows (`ViewGraph::kMaxViewDepth`).
pub const MAX_VIEW_DEPTH: usize = 20;

/// The namespaces (collection names of the same database) a view with `view_on` and
/// `pipeline` reads.
pub fn references(view_on: &str, pipeline: &[Document]) -> Vec<String> {
    let mut out = vec![view_on.to_string()];
    pipeline_references(pipeline, &mut out);
    out
}

fn pipeline_references(pipeline: &[Document], out: &mut Vec<String>) {
    for stage in pipeline {
        let Some((name, spec)) = stage.iter().next() else {
            continue;
        };
        match (name.as_str(), spec) {
            ("$lookup" | "$graphLookup", Bson::Document(spec)) => {
                if let Ok(from) = spec.get_str("from") {
                    out.push(from.to_string());
                }
                sub_pipeline_references(spec.get("pipeline"), out);
            }
            ("$unionWith", Bson::String(coll)) => out.push(coll.clone()),
            ("$unionWith", Bson::Document(spec)) => {
                if let Ok(coll) = spec.get_str("coll") {
                    out.push(coll.to_string());
                }
                sub_pipeline_references(spec.get("pipeline"), out);
            }
            ("$facet", Bson::Document(facets)) => {
                for (_, facet) in facets {
                    sub_pipeline_references(Some(facet), out);
                }
            }
            _ => {}
        }
    }
}

fn sub_pipeline_references(pipeline: Option<&Bson>, out: &mut Vec<String>) {
    if let Some(Bson::Array(stages)) = pipeline {
        let stages: Vec<Document> = stages
            .iter()
            .filter_map(|s| s.as_document().cloned())
            .collect();
        pipeline_references(&stages, out);
    }
}

/// The views of one database: what each reads.
pub struct ViewGraph<'a> {
    db: &'a str,
    children: HashMap<String, Vec<String>>,
}

fn depth_exceeded() -> MongoError {
    MongoError::new(
        ErrorCode::ViewDepthLimitExceeded,
        format!("View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}"),
    )
}

impl<'a> ViewGraph<'a> {
    /// The graph of `views` (each a name and what it reads) in database `db`.
    pub fn new(db: &'a str, views: impl IntoIterator<Item = (String, Vec<String>)>) -> Self {
        ViewGraph {
            db,
            children: views.into_iter().collect(),
        }
    }

    /// Adds view `name` reading `refs`, refusing it when it closes a cycle or makes a chain
    /// of views longer than [`MAX_VIEW_DEPTH`].
    pub fn insert(&mut self, name: &str, refs: Vec<String>) -> Result<()> {
        self.children.insert(name.to_string(), refs);
        let mut heights = HashMap::new();
        let mut path = vec![name.to_string()];
        // Heights count namespaces: below the view, the non-view leaves are one more.
        let below = self.child_height(name, name, 0, &mut heights, &mut path)? - 1;
        let above = self.parent_height(name)?;
        // Both include the view itself.
        if above + below - 1 > MAX_VIEW_DEPTH {
            return Err(depth_exceeded());
        }
        Ok(())
    }

    /// The namespaces on the longest path from `node` down to a collection, `node` included.
    fn child_height(
        &self,
        start: &str,
        node: &str,
        depth: usize,
        heights: &mut HashMap<String, usize>,
        path: &mut Vec<String>,
    ) -> Result<usize> {
        if depth > 0 && node == start {
            let ns = |name: &String| format!("{}.{name}", self.db);
            let mut message = format!("View cycle detected: {}", ns(&path[path.len() - 1]));
            for name in path.iter().rev() {
                message.push_str(&format!(" => {}", ns(name)));
            }
            return Err(MongoError::new(ErrorCode::GraphContainsCycle, message));
        }
        if depth > MAX_VIEW_DEPTH {
            return Err(depth_exceeded());
        }
        let mut highest = 0;
        for child in self.children.get(node).into_iter().flatten() {
            let height = match heights.get(child) {
                Some(height) => *height,
                None => {
                    path.push(child.clone());
                    let height = self.child_height(start, child, depth + 1, heights, path)?;
                    path.pop();
                    height
                }
            };
            highest = highest.max(height);
        }
        heights.insert(node.to_string(), highest + 1);
        Ok(highest + 1)
    }

    /// The views on the longest path from a view nothing reads down to `node`, `node`
    /// included.
    fn parent_height(&self, node: &str) -> Result<usize> {
        let mut parents: HashMap<&str, HashSet<&str>> = HashMap::new();
        for (view, refs) in &self.children {
            for child in refs {
                parents
                    .entry(child.as_str())
                    .or_default()
                    .insert(view.as_str());
            }
        }
        let mut heights = HashMap::new();
        up(&parents, node, 0, &mut heights)
    }
}

fn up<'g>(
    parents: &HashMap<&'g str, HashSet<&'g str>>,
    node: &'g str,
    depth: usize,
    heights: &mut HashMap<&'g str, usize>,
) -> Result<usize> {
    // A cycle stored before such views were refused ends here too.
    if depth > MAX_VIEW_DEPTH {
        return Err(depth_exceeded());
    }
    let mut highest = 0;
    for parent in parents.get(node).into_iter().flatten() {
        let height = match heights.get(parent) {
            Some(height) => *height,
            None => up(parents, parent, depth + 1, heights)?,
        };
        highest = highest.max(height);
    }
    heights.insert(node, highest + 1);
    Ok(highest + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn lookup(from: &str) -> Document {
        doc! {"$lookup": {"from": from, "as": "as", "localField": "l", "foreignField": "f"}}
    }

    /// Creates views in order in one graph; the code of the first refused, else 0.
    fn create(views: &[(&str, &str, Vec<Document>)]) -> i32 {
        let mut graph = ViewGraph::new("db", []);
        for (name, on, pipeline) in views {
            if let Err(e) = graph.insert(name, references(on, pipeline)) {
                return e.code().code();
            }
        }
        0
    }

    #[test]
    fn cycles_through_view_on_and_every_reading_stage_are_refused() {
        assert_eq!(create(&[("a", "a", vec![])]), 5);
        assert_eq!(create(&[("a", "b", vec![]), ("b", "a", vec![])]), 5);
        assert_eq!(create(&[("a", "b", vec![lookup("a")])]), 5);
        let graph_lookup = doc! {"$graphLookup": {"from": "a", "as": "x", "startWith": "$s",
        "connectFromField": "f", "connectToField": "t"}};
        assert_eq!(create(&[("a", "b", vec![graph_lookup])]), 5);
        let facet = doc! {"$facet": {"f": [lookup("a")]}};
        assert_eq!(create(&[("a", "b", vec![facet])]), 5);
        assert_eq!(create(&[("a", "b", vec![doc! {"$unionWith": "a"}])]), 5);
        let nested = doc! {"$unionWith": {"coll": "c", "pipeline": [{"$unionWith": "a"}]}};
        assert_eq!(create(&[("a", "b", vec![nested])]), 5);
        let in_lookup = doc! {"$lookup": {"from": "c", "as": "x", "pipeline": [lookup("a")]}};
        assert_eq!(create(&[("a", "b", vec![in_lookup])]), 5);
        // Reading what it is on is no cycle.
        assert_eq!(create(&[("a", "b", vec![lookup("b")])]), 0);
    }

    #[test]
    fn the_cycle_is_named() {
        let mut graph = ViewGraph::new("db", []);
        graph.insert("a", references("b", &[])).unwrap();
        let err = graph.insert("b", references("a", &[])).unwrap_err();
        assert_eq!(
            err.message(),
            "View cycle detected: db.b => db.b => db.a => db.b"
        );
    }

    #[test]
    fn chains_longer_than_twenty_views_are_refused_wherever_the_view_joins() {
        // v1 reads v2 four ways, ..., v20 reads v21 (a collection): 20 views deep.
        let mut views = Vec::new();
        for i in 1..=MAX_VIEW_DEPTH {
            let child = format!("v{}", i + 1);
            let pipeline = vec![
                lookup(&child),
                doc! {"$facet": {"k": [lookup(&child)]}},
                doc! {"$unionWith": &child},
            ];
            views.push((format!("v{i}"), child, pipeline));
        }
        let views: Vec<(&str, &str, Vec<Document>)> = views
            .iter()
            .map(|(n, o, p)| (n.as_str(), o.as_str(), p.clone()))
            .collect();
        assert_eq!(create(&views), 0);
        let with = |extra: (&'static str, &'static str, Vec<Document>)| {
            let mut all = views.clone();
            all.push(extra);
            create(&all)
        };
        assert_eq!(with(("v21", "v22", vec![])), 165);
        assert_eq!(with(("v0", "v1", vec![])), 165);
        assert_eq!(with(("v0", "ok", vec![lookup("v1")])), 165);
        assert_eq!(with(("v0", "ok", vec![doc! {"$unionWith": "v1"}])), 165);
        assert_eq!(with(("vMid", "v10", vec![])), 0);
    }
}
