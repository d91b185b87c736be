//! The `switchboard` command line (see `switchboard::cli`).

fn main() -> std::process::ExitCode {
    switchboard::cli::main()
}
