//! The `switchboard` command line (see `cli`).

fn main() -> std::process::ExitCode {
    cli::main()
}
