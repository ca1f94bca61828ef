//! Commands every role answers the same way (handshake, diagnostics, parameters); each role
//! adds these to its own table.

mod diagnostics;
mod handshake;
mod parameters;
mod testing;

pub use handshake::{MAX_WIRE_VERSION, MONGODB_VERSION};

use super::dispatch::{CommandSpec, NodeState};

/// The shared commands, for a role's table.
pub fn common<S: NodeState>() -> Vec<CommandSpec<S>> {
    let mut specs = handshake::commands();
    specs.extend(diagnostics::commands());
    specs.extend(parameters::commands());
    specs.extend(testing::commands());
    specs
}
