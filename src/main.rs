use std::process::ExitCode;

use clap::Parser;

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
