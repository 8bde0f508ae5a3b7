use std::process::ExitCode;

use clap::Parser;

/// mimalloc keeps freed memory for reuse where glibc returns large blocks to
/// the kernel, so big per-stage buffers are not faulted in and zeroed again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    neardup::logging::init();
    match neardup::cli::run(neardup::cli::Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
