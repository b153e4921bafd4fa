#![doc = include_str!("../README.md")]

mod env;
mod error;
#[cfg(target_os = "linux")]
mod linux;
mod policy;
mod probe;
mod sandbox;
mod seatbelt;

pub use env::DEFAULT_HIDDEN_ENV;
pub use error::SandboxError;
pub use policy::{DEFAULT_MAX_PROCESSES, PROTECTED_NAMES, SandboxMode, SandboxPolicy};
pub use probe::{ProcessBound, Support, probe};
pub use sandbox::Sandbox;
pub use seatbelt::{SANDBOX_EXEC, seatbelt_args, seatbelt_profile};
