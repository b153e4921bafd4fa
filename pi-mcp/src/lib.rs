#![doc = include_str!("../README.md")]

mod client;
mod server;
