//! Scenario tests of the engine: commands in, run views out, every view checked
//! against the official JSON Schemas.

mod acceptance;
mod agent;
mod checks;
mod guarantees;
mod people;
mod start;
mod support;
mod traces;
mod waits;
mod walks;
mod work;
