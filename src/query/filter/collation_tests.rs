//! Filters under a collation: comparisons of strings anywhere in a value follow it, `$regex`
//! does not.

use super::Filter;
use crate::document::collation::Collation;
use crate::expression::LetVariables;
use bson::{Document, doc};
use std::sync::Arc;

fn matches(filter: Document, collation: Document, doc: Document) -> bool {
    let collation = Arc::new(Collation::parse(&collation).unwrap());
    let vars = LetVariables::empty(bson::DateTime::now()).with_collation(Some(collation));
    Filter::parse_with_variables(&filter, &Arc::new(vars))
        .unwrap()
        .matches(&doc)
}

#[test]
fn comparisons_follow_the_collation() {
    let ci = doc! {"locale": "en", "strength": 2};
    assert!(matches(doc! {"a": "abc"}, ci.clone(), doc! {"a": "ABC"}));
    assert!(matches(
        doc! {"a": {"$eq": "ABC"}},
        ci.clone(),
        doc! {"a": ["x", "abc"]}
    ));
    assert!(!matches(
        doc! {"a": {"$ne": "abc"}},
        ci.clone(),
        doc! {"a": "Abc"}
    ));
    assert!(matches(
        doc! {"a": {"$in": ["x", "ABC"]}},
        ci.clone(),
        doc! {"a": "abc"}
    ));
    assert!(!matches(
        doc! {"a": {"$nin": ["ABC"]}},
        ci.clone(),
        doc! {"a": "abc"}
    ));
    // Strings inside embedded documents and arrays compare by the collation too.
    assert!(matches(
        doc! {"a": {"b": "X"}},
        ci.clone(),
        doc! {"a": {"b": "x"}}
    ));
    assert!(matches(
        doc! {"a": ["X", "Y"]},
        ci.clone(),
        doc! {"a": ["x", "y"]}
    ));
    assert!(matches(
        doc! {"a": {"$elemMatch": {"$eq": "Q"}}},
        ci.clone(),
        doc! {"a": ["q"]}
    ));
    // Ranges: "B" < "a" bytewise, but not in English.
    assert!(matches(
        doc! {"a": {"$gt": "B"}},
        ci.clone(),
        doc! {"a": "c"}
    ));
    assert!(!matches(
        doc! {"a": {"$lt": "B"}},
        ci.clone(),
        doc! {"a": "c"}
    ));
    // `$regex` ignores the collation.
    assert!(!matches(
        doc! {"a": {"$regex": "^abc"}},
        ci.clone(),
        doc! {"a": "ABC"}
    ));
    // `$expr` compares by it as well.
    assert!(matches(
        doc! {"$expr": {"$eq": ["$a", "ABC"]}},
        ci,
        doc! {"a": "abc"}
    ));
    let numeric = doc! {"locale": "en", "numericOrdering": true};
    assert!(matches(doc! {"a": {"$gt": "9"}}, numeric, doc! {"a": "10"}));
}

#[test]
fn equality_lookups_leave_collated_strings_alone() {
    let collation = Arc::new(Collation::parse(&doc! {"locale": "fr", "strength": 1}).unwrap());
    let vars = LetVariables::empty(bson::DateTime::now()).with_collation(Some(collation));
    let filter = Filter::parse_with_variables(&doc! {"_id": "x", "n": 1}, &Arc::new(vars)).unwrap();
    assert_eq!(filter.equality("_id"), None);
    assert_eq!(filter.equality("n"), Some(&bson::Bson::Int32(1)));
}
