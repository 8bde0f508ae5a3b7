//! Log setup: `tracing` to stderr, quiet unless `RUST_LOG` asks for more.

use tracing_subscriber::EnvFilter;

/// Installs the stderr subscriber; `RUST_LOG=info` shows the run's stages.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
