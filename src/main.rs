//! `servebench`: parse the command line, run the pipeline, exit with its status.
fn main() -> std::process::ExitCode {
    servebench::cli::main()
}
