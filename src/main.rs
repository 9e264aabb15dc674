//! The `empathy-gym` command: parse, run, print the error chain, exit 2 on bad input.

use std::process::ExitCode;

use clap::Parser;

mod cli;

/// Large blocks kept for reuse instead of page-faulted afresh on every training step
/// (engine/src/alloc.rs); part of the engine's CPU speed work (feature `cpu-kernels`).
#[cfg(feature = "cpu-kernels")]
#[global_allocator]
static ALLOC: empathy_engine::alloc::CachingAlloc = empathy_engine::alloc::CachingAlloc;

fn main() -> ExitCode {
    // Piping into `head` closes stdout early: end quietly like other Unix tools instead of
    // panicking in println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    empathy_gym::model::fix_thread_count();
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            let user_error = err
                .downcast_ref::<empathy_gym::Error>()
                .is_some_and(|e| e.is_user_error());
            ExitCode::from(if user_error { 2 } else { 1 })
        }
    }
}
