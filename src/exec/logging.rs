//! Log setup: `tracing` to stderr, quiet unless `RUST_LOG` asks for more;
//! colours only on a terminal, and never under `NO_COLOR`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the stderr subscriber; `RUST_LOG=info` shows the run's stages.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let colours = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colours)
        .with_writer(|| LogLines)
        .with_target(false)
        // A stderr that cannot be written (a full disk, a closed pipe)
        // loses the logs; reporting that on stderr would panic.
        .log_internal_errors(false)
        .try_init();
}

/// Writes `line` to stderr, ignoring a stderr that cannot be written (a
/// full disk, a closed pipe): `eprintln!` would panic there instead.
pub fn print_error(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Stderr for log lines, written around a progress bar being drawn.
struct LogLines;

impl std::io::Write for LogLines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        crate::exec::progress::write_around_bar(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process's resident and peak resident memory in MiB (Linux; zeros
/// elsewhere), for the stage logs: which stage holds the memory is the
/// first question a run that peaks too high raises.
pub(crate) fn resident_mib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
