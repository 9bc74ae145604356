//! What a command returns: the run after it and the effects to carry out once it is
//! stored.

use crate::effect::Effect;
use crate::model::Run;

/// What a command produces: the new run and what to do once it is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The run after the command.
    pub run: Run,
    /// Timers and notifications to carry out after commit.
    pub effects: Vec<Effect>,
}
