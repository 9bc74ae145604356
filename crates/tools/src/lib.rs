#![doc = include_str!("../README.md")]

pub mod arguments;
mod call;
pub mod commands;
mod decoded;

pub use call::call;
pub use commands::perform;
