#![doc = include_str!("../README.md")]
#![recursion_limit = "256"]

pub mod envelope;
mod server;

pub use server::{Answer, CallArguments, CallTrace, McpServer, record_outcome, request_id};
