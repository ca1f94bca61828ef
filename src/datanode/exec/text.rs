//! `$text` on a data node: the filter's search bound to the collection's one text index (a
//! filter naming `$text` without one, or on a collection that does not exist, fails with
//! IndexNotFound as in MongoDB). Documents are matched and scored from their own text by the
//! index's specification, the score a scan of the index's keys would add up to.

use crate::datanode::storage::CollectionMeta;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::query::text::TextIndex;
use std::borrow::Cow;
use std::sync::Arc;

/// The collection's text index.
pub fn text_index(coll: &CollectionMeta) -> Option<Arc<TextIndex>> {
    coll.indexes
        .iter()
        .filter(|index| index.ready)
        .find_map(|index| index.parsed.as_ref()?.text.clone())
}

/// Binds the filter's `$text` (if any) to `coll`'s text index; `None`: the collection does not
/// exist.
pub fn bind_text(filter: &mut Filter, coll: Option<&CollectionMeta>) -> Result<()> {
    if !filter.has_text() {
        return Ok(());
    }
    match coll {
        Some(coll) => filter.bind_text(text_index(coll)),
        None => Err(MongoError::new(
            ErrorCode::IndexNotFound,
            "text index required for $text query (no such collection)",
        )),
    }
}

/// The filter with its `$text` (if any) bound to `coll`'s text index: the filter itself when
/// it has none.
pub fn bound_text<'a>(filter: &'a Filter, coll: &CollectionMeta) -> Result<Cow<'a, Filter>> {
    if !filter.has_text() {
        return Ok(Cow::Borrowed(filter));
    }
    let mut bound = filter.clone();
    bind_text(&mut bound, Some(coll))?;
    Ok(Cow::Owned(bound))
}
