//! A structure-aware mutation fuzzer for the project's parsers and loaders, without coverage
//! feedback (cargo-fuzz needs a nightly compiler and cargo-afl an instrumented build of candle
//! and tokenizers). Each [`Target`] holds real seed files (written here or read from the
//! repository) and a check that feeds one input to the project's own loader the way the program
//! does; every failure must come back as an `Err`. The [`runner`] mutates the seeds with
//! byte-level and format-aware mutations ([`mutate`]), runs the check under `catch_unwind`, and
//! saves every input that panicked. The [`watch`] module is the part outside unwinding: an
//! allocator that flags any single request over 2 GiB and a handler that saves the input of a
//! process that aborts.
//!
//! `benches/fuzz.rs` is the campaign (`scripts/fuzz.sh`); `tests/integration/fuzz_smoke.rs`
//! runs every target for a few inputs.

pub mod context;
pub mod corpus;
pub mod crashes;
pub mod mutate;
pub mod panics;
pub mod registry;
pub mod report;
pub mod runner;
pub mod target;
pub mod targets;
pub mod watch;

pub use context::FuzzContext;
pub use registry::{build, TARGETS};
pub use report::Report;
pub use runner::{run, run_reporting, Budget};
pub use target::{Kind, Target};
