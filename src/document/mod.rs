//! BSON semantics every role shares: MongoDB's comparison order, numeric comparison across
//! types, dotted field paths. Pure functions, no IO.

pub mod display;
pub mod keystring;
pub mod numeric;
pub mod order;
pub mod path;
