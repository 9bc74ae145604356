#![doc = include_str!("../README.md")]

mod acceptance;
mod error;
mod fields;

pub use acceptance::{EvidenceItem, MAX_SUMMARY_CHARS, Submission, Submitter, check_submission};
pub use error::{Code, ToolError};
pub use fields::{PersonFormat, check_fields};
