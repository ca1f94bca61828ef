//! The collation an operation runs under: its own `collation`, else its collection's default
//! (stored normalized in the collection's options); on a view, the view's, which an operation
//! may not override (MongoDB's OptionNotSupportedOnView), so that a view's string comparisons
//! cannot be circumvented.

use super::storage::{CollectionMeta, Storage};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use std::sync::Arc;

/// A stored default collation (a normalized spec), `None` for the simple one.
pub fn stored(spec: Option<&Document>) -> Result<Option<Arc<Collation>>> {
    Ok(match spec {
        Some(spec) => Some(Arc::new(Collation::parse_stored(spec)?)).filter(|c| !c.is_simple()),
        None => None,
    })
}

/// The default collation of a collection, `None` for the simple one.
pub fn collection_default(meta: &CollectionMeta) -> Result<Option<Arc<Collation>>> {
    match meta.options.get("collation") {
        Some(Bson::Document(spec)) => stored(Some(spec)),
        _ => Ok(None),
    }
}

/// What `create` stores for a requested collation: the normalized spec, nothing for the
/// simple one (which is no default at all).
pub fn to_store(requested: Option<&Bson>) -> Result<Option<Document>> {
    let collation = crate::command::parse_collation(requested)?;
    Ok(collation.filter(|c| !c.is_simple()).map(|c| c.spec()))
}

/// The collation an operation on `db.name` asking for `requested` (`None`: not given) runs
/// under: `Some` when it differs from what `requested` alone gives (a default applies).
pub async fn effective(
    storage: &Storage,
    db: &str,
    name: &str,
    requested: Option<Arc<Collation>>,
) -> Result<Option<Arc<Collation>>> {
    if let Some(view) = super::views::definition(storage, db, name).await? {
        let own = stored(view.collation.as_ref())?;
        let matches = match (&requested, &own) {
            (None, _) => true,
            (Some(asked), None) => asked.is_simple(),
            (Some(asked), Some(own)) => asked == own,
        };
        if !matches {
            return Err(MongoError::new(
                ErrorCode::OptionNotSupportedOnView,
                "Cannot override a view's default collation",
            ));
        }
        return Ok(Some(own.unwrap_or_else(|| Arc::new(Collation::Simple))));
    }
    if requested.is_some() {
        return Ok(requested);
    }
    match storage.collection(db, name).await {
        Some((_, meta)) => collection_default(&meta),
        None => Ok(None),
    }
}

/// [`effective`] for a command's top-level `collation`.
pub async fn for_request(
    storage: &Storage,
    req: &crate::command::CommandRequest,
    name: &str,
) -> Result<Option<Arc<Collation>>> {
    let requested = crate::command::parse_collation(req.args().value("collation")?.as_ref())?;
    effective(storage, &req.db, name, requested).await
}
