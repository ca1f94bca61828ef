//! BSON semantics every role shares: MongoDB's comparison order (and collations, which compare
//! strings by a locale's rules), numeric comparison across
//! types, order-preserving key bytes, MongoDB's hashed-index hash, dotted field paths. Pure
//! functions, no IO.

pub mod collation;
mod collation_data;
pub mod collation_locales;
pub mod display;
pub mod hashed;
pub mod key_decode;
pub mod keystring;
pub mod numeric;
pub mod order;
pub mod path;
pub mod type_bits;
pub mod types;
