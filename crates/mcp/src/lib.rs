#![doc = include_str!("../README.md")]

pub mod arguments;
mod decoded;
mod server;
pub mod tools;

pub use server::{CallArguments, CallTrace, McpServer, record_outcome, request_id};
