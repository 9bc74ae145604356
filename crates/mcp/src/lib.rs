#![doc = include_str!("../README.md")]
#![recursion_limit = "256"]

pub mod arguments;
mod decoded;
mod server;
pub mod tools;

pub use server::{CallArguments, CallTrace, McpServer, record_outcome, request_id};
