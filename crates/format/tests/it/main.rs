//! Integration tests of the format library: the conformance fixtures, one refusal
//! per publication rule, the content hash against an independent implementation,
//! and never a panic on any input.

mod fixtures;
mod fuzz;
mod reference_hash;
mod rules;
mod support;
mod yaml_crates;
mod yaml_differential;
