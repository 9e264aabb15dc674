//! The one integration test target: each module is one area of the crate.

#[path = "integration/factual.rs"]
mod factual;
