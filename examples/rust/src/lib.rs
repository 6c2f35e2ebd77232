//! nanscope's SDK for Rust trainers: the C ABI of include/nanscope/nanscope.h (`ffi`) and safe
//! types over it (`Session`, `Slot`, `Error`): a session closes itself when dropped, and every
//! call returns `Result` with the library's status and message (docs/sdk.md).
pub mod ffi;
mod sdk;

pub use sdk::{Error, Session, Slot, StepResult};
