//! Document semantics of the query language, independent of storage: filters, projections,
//! sort orders and update operators over `bson::Document`s.
