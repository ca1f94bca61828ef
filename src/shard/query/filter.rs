//! INTERIM: replaced by the query-engine branch.
use crate::document::order::values_equal;
use crate::document::path::get_path;
use crate::error::Result;
use bson::{Bson, Document};

#[derive(Clone, Debug)]
pub struct Filter {
    doc: Document,
}

impl Filter {
    pub fn parse(filter: &Document) -> Result<Filter> {
        Ok(Filter {
            doc: filter.clone(),
        })
    }
    pub fn match_all() -> Filter {
        Filter {
            doc: Document::new(),
        }
    }
    pub fn matches(&self, doc: &Document) -> bool {
        self.doc.iter().all(|(k, v)| {
            get_path(doc, k)
                .map(|x| values_equal(x, v))
                .unwrap_or(matches!(v, Bson::Null))
        })
    }
    pub fn equality(&self, path: &str) -> Option<&Bson> {
        self.doc.get(path).filter(|v| {
            !matches!(
                v,
                Bson::Document(_) | Bson::RegularExpression(_) | Bson::Array(_)
            )
        })
    }
    pub fn is_empty(&self) -> bool {
        self.doc.is_empty()
    }
}
