//! The `atfunc` command-line tool.

fn main() -> std::process::ExitCode {
    atfunc_cli::run(std::env::args_os())
}
