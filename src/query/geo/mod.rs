//! Geospatial semantics: GeoJSON and legacy coordinate pairs as documents hold them, the
//! shapes `$geoWithin`, `$geoIntersects` and `$near` name, their predicates and distances on
//! the sphere (S2, through the `s2` crate) and on the plane (legacy shapes), and the S2 cell
//! coverings a `2dsphere` index stores and scans. Pure.
//!
//! - `shape`: parsing geometries (GeoJSON, legacy pairs) with MongoDB's validation messages.
//! - `sphere`: loops, polygons and the spherical predicates (contains, intersects, distance).
//! - `cover`: S2 cell coverings, the keys of a `2dsphere` index and the ranges a query scans.
//! - `flat`: the grid a `2d` index keys legacy pairs in, and rectangles' ranges in it.
//! - `near`: `$near`/`$nearSphere`, their units and distances.
//! - `query`: the operands of `$geoWithin`/`$geoIntersects` and their matching.

mod cover;
mod flat;
mod near;
mod query;
mod shape;
mod sphere;

pub use cover::{GeometryRegion, SphereIndexParams, merge_ranges};
pub use flat::FlatIndexParams;
pub use near::{NearQuery, has_near};
pub use query::{GeoPredicate, Region};
pub use shape::{GeoPoint, Geometry, number};

/// MongoDB's radius of the earth, in meters, which turns GeoJSON distances into radians.
pub const EARTH_RADIUS_METERS: f64 = 6378.1 * 1000.0;
