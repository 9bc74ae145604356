#![doc = include_str!("../README.md")]

mod fields;

pub use fields::{PersonFormat, check_fields};
