#![doc = include_str!("../README.md")]

pub mod arguments;
mod server;
pub mod tools;

pub use server::{McpServer, record_outcome};
