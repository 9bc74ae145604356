#![doc = include_str!("../README.md")]

pub mod arguments;
mod decoded;
mod server;
pub mod tools;

pub use server::{CallArguments, McpServer, record_outcome};
