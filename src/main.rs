use std::process::ExitCode;

/// mimalloc keeps freed memory for reuse where glibc returns large blocks to
/// the kernel, so big per-stage buffers are not faulted in and zeroed again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    #[cfg(unix)]
    neardup::exec::runtime::stop_on_signals();
    neardup::exec::logging::init();
    let cli = neardup::cli::parse();
    neardup::exec::allocator::tune(cli.command.frees_big_buffers());
    let ran = neardup::cli::run(cli);
    neardup::exec::runtime::claim_the_exit();
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            neardup::exec::logging::print_error(&format!("error: {error:#}"));
            ExitCode::FAILURE
        }
    }
}
