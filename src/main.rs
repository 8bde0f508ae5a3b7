use std::process::ExitCode;

use clap::Parser;

/// mimalloc keeps freed memory for reuse where glibc returns large blocks to
/// the kernel, so big per-stage buffers are not faulted in and zeroed again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: milliseconds freed memory is kept
/// before it goes back to the kernel.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Turns transparent huge pages off and sets mimalloc's purge delay, each
/// unless the environment (`MIMALLOC_ALLOW_THP`, `MIMALLOC_PURGE_DELAY`)
/// speaks for it, so both stay tunable per run.
fn tune_allocator(command: &neardup::cli::Command) {
    use neardup::cli::Command;
    let unset = |name: &str| std::env::var_os(name).is_none();
    if unset("MIMALLOC_ALLOW_THP") {
        // Huge pages save no user time on `match` and `cluster` and cost
        // much system time on a VM whose host backs memory lazily: each
        // first touch clears and backs 2 MiB, freed ones are split and
        // faulted again.
        // mimalloc asks for them (`MADV_HUGEPAGE`) on the arena it maps at
        // its first allocation, before `main`, so its own option is too
        // late: the process-wide switch is the kernel's.
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with integer arguments touches no memory of ours.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0)
        };
    }
    if matches!(command, Command::Cluster(_) | Command::Run(_)) && unset("MIMALLOC_PURGE_DELAY") {
        // `cluster` frees each step's buffers (gigabytes at crawl scale)
        // as the next step allocates others of other sizes. Kept 250 ms
        // rather than mimalloc's 1 s, they mostly stop counting twice in
        // the peak, while most are still reused rather than faulted again,
        // as they would not be with a much shorter delay.
        // SAFETY: called before any other thread exists.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 250) };
    }
}

fn main() -> ExitCode {
    neardup::exec::logging::init();
    let cli = neardup::cli::Cli::parse();
    tune_allocator(&cli.command);
    match neardup::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
