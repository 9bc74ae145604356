//! Scenario tests of the engine: commands in, run views out, every view checked
//! against the official JSON Schemas.

mod agent;
mod start;
mod support;
