//! Commands every role answers the same way (handshake, diagnostics, parameters); each role
//! adds these to its own table.

mod auth;
mod diagnostics;
mod handshake;
mod introspection;
mod parameters;
mod sessions;
mod testing;
mod transactions;

pub use handshake::{MAX_WIRE_VERSION, MONGODB_VERSION};
pub use introspection::{kill_op, parse_op_id};

use super::dispatch::{CommandSpec, NodeState};

/// The shared commands, for a role's table.
pub fn common<S: NodeState>() -> Vec<CommandSpec<S>> {
    let mut specs = handshake::commands();
    specs.extend(auth::commands());
    specs.extend(diagnostics::commands());
    specs.extend(parameters::commands());
    specs.extend(testing::commands());
    specs.extend(introspection::commands());
    specs.extend(sessions::commands());
    specs.extend(transactions::commands());
    specs
}
