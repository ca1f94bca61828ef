//! `$text` in a filter: parsed with its arguments wherever the filter is parsed, placed where
//! MongoDB allows it (once, under `$and`s and `$or`s only — the planner then needs every other
//! `$or` branch indexed, `datanode::exec::text`), and bound to the
//! collection's text index by the data node that runs it ([`Filter::bind_text`]); unbound it
//! fails with IndexNotFound, as MongoDB's planner does without a text index.

use super::{Filter, Node};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::text::{TextIndex, TextQuery, TextSearch};
use bson::{Bson, Document};
use std::sync::Arc;

/// A `$text` predicate.
#[derive(Clone, Debug)]
pub(crate) struct TextNode {
    search: TextSearch,
    bound: Option<(Arc<TextIndex>, TextQuery)>,
}

impl TextNode {
    pub(super) fn parse(value: &Bson) -> Result<TextNode> {
        Ok(TextNode {
            search: TextSearch::parse(value)?,
            bound: None,
        })
    }

    fn unbound() -> MongoError {
        MongoError::new(
            ErrorCode::IndexNotFound,
            "text index required for $text query",
        )
    }

    /// The document's score when it matches.
    fn score(&self, doc: &Document) -> Result<Option<f64>> {
        let (index, query) = self.bound.as_ref().ok_or_else(Self::unbound)?;
        query.score(index, doc)
    }

    pub(super) fn matches(&self, doc: &Document) -> Result<bool> {
        Ok(self.score(doc)?.is_some())
    }
}

/// MongoDB's placement rules: one `$text`, not under `$nor` or `$not` (under `$or` the
/// planner needs every other branch indexed).
pub(super) fn check_placement(root: &Node) -> Result<()> {
    fn walk(node: &Node, under: Option<&'static str>, count: &mut usize) -> Result<()> {
        match node {
            Node::Text(_) => {
                *count += 1;
                match under {
                    Some(_) => Err(MongoError::bad_value("text expression not allowed in nor")),
                    None => Ok(()),
                }
            }
            Node::And(children) | Node::Or(children) => {
                children.iter().try_for_each(|c| walk(c, under, count))
            }
            Node::Nor(children) => children
                .iter()
                .try_for_each(|c| walk(c, Some("$nor"), count)),
            Node::Not(child) => walk(child, Some("$not"), count),
            _ => Ok(()),
        }
    }
    let mut count = 0;
    walk(root, None, &mut count)?;
    if count > 1 {
        return Err(MongoError::bad_value("Too many text expressions"));
    }
    Ok(())
}

fn text_node(node: &Node) -> Option<&TextNode> {
    match node {
        Node::Text(text) => Some(text),
        Node::And(children) | Node::Or(children) => children.iter().find_map(text_node),
        _ => None,
    }
}

fn text_node_mut(node: &mut Node) -> Option<&mut TextNode> {
    match node {
        Node::Text(text) => Some(text),
        Node::And(children) | Node::Or(children) => children.iter_mut().find_map(text_node_mut),
        _ => None,
    }
}

impl Filter {
    /// Whether the filter has a `$text`.
    pub fn has_text(&self) -> bool {
        text_node(&self.root).is_some()
    }

    /// Runs the filter's `$text` on the collection's text index (`None`: the collection has
    /// none, MongoDB's IndexNotFound). A filter without `$text` is left as it is.
    pub fn bind_text(&mut self, index: Option<Arc<TextIndex>>) -> Result<()> {
        let Some(node) = text_node_mut(&mut self.root) else {
            return Ok(());
        };
        let index = index.ok_or_else(TextNode::unbound)?;
        let query = node.search.against(&index);
        node.bound = Some((index, query));
        Ok(())
    }

    /// The text score of a document the filter's `$text` matches: `None` without `$text` or
    /// when the document does not match it (it came through another `$or` branch).
    pub fn text_match_score(&self, doc: &Document) -> Result<Option<f64>> {
        match text_node(&self.root) {
            Some(node) => node.score(doc),
            None => Ok(None),
        }
    }

    /// The text score of a document the filter matched (`{$meta: "textScore"}`): `None`
    /// without `$text`.
    pub fn text_score(&self, doc: &Document) -> Result<Option<f64>> {
        match text_node(&self.root) {
            Some(node) => Ok(Some(node.score(doc)?.unwrap_or(0.0))),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn index() -> Arc<TextIndex> {
        Arc::new(TextIndex::parse(&doc! {"t": "text"}, &doc! {}).unwrap().1)
    }

    #[test]
    fn bound_to_a_text_index() {
        let mut filter = Filter::parse(&doc! {"a": 1, "$text": {"$search": "coffee"}}).unwrap();
        assert!(filter.has_text());
        assert_eq!(
            filter
                .try_matches(&doc! {"a": 1, "t": "coffee"})
                .unwrap_err()
                .code(),
            ErrorCode::IndexNotFound
        );
        assert!(
            filter.has_expr(),
            "evaluation can fail: the executor reports it"
        );
        assert_eq!(
            filter.clone().bind_text(None).unwrap_err().code(),
            ErrorCode::IndexNotFound
        );
        filter.bind_text(Some(index())).unwrap();
        assert!(filter.matches(&doc! {"a": 1, "t": "Coffee time"}));
        assert!(!filter.matches(&doc! {"a": 2, "t": "Coffee time"}));
        assert!(!filter.matches(&doc! {"a": 1, "t": "tea time"}));
        let score = filter.text_score(&doc! {"t": "coffee"}).unwrap().unwrap();
        assert!((score - 1.0).abs() < 1e-9);
        assert_eq!(
            Filter::parse(&doc! {"a": 1})
                .unwrap()
                .text_score(&doc! {})
                .unwrap(),
            None
        );
    }

    #[test]
    fn placement_errors() {
        let code = |f: Document| Filter::parse(&f).unwrap_err().code().code();
        let text = doc! {"$search": "x"};
        assert_eq!(
            code(doc! {"$text": text.clone(), "$and": [{"$text": text.clone()}]}),
            2
        );
        assert_eq!(code(doc! {"$nor": [{"$text": text.clone()}]}), 2);
        assert!(
            Filter::parse(&doc! {"$or": [{"$text": text.clone()}, {"a": 1}]})
                .unwrap()
                .has_text()
        );
        assert_eq!(
            code(doc! {"$nor": [{"$or": [{"$text": text.clone()}, {"a": 1}]}]}),
            2
        );
        assert_eq!(code(doc! {"a": {"$elemMatch": {"$text": text.clone()}}}), 2);
        assert_eq!(code(doc! {"$text": {"$search": 1}}), 2);
        assert!(
            Filter::parse(&doc! {"$and": [{"$text": text}]})
                .unwrap()
                .has_text()
        );
    }
}
