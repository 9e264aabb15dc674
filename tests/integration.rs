//! The one integration test target: each module below is one area of the crate.

#[path = "integration/grpo.rs"]
mod grpo;
