//! INTERIM: replaced by the query-engine branch.
use crate::document::order::compare_values;
use crate::document::path::get_path;
use crate::error::Result;
use bson::{Bson, Document};
use std::cmp::Ordering;

#[derive(Clone, Debug)]
pub struct SortSpec {
    keys: Vec<(String, bool)>,
}

impl SortSpec {
    pub fn parse(spec: &Document) -> Result<SortSpec> {
        Ok(SortSpec {
            keys: spec
                .iter()
                .map(|(k, v)| (k.clone(), v.as_i32().unwrap_or(1) < 0))
                .collect(),
        })
    }
    pub fn compare(&self, a: &Document, b: &Document) -> Ordering {
        for (k, desc) in &self.keys {
            let x = get_path(a, k).unwrap_or(&Bson::Null);
            let y = get_path(b, k).unwrap_or(&Bson::Null);
            let o = compare_values(x, y);
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }
}
