//! The `atfunc` command inside the Python package: `pip install atfunc` installs a script
//! `atfunc` (`atfunc/_cli.py`) that hands its arguments to [`atfunc_cli::run`], the code
//! the `atfunc` binary runs. One copy of the command's code, in the extension module the
//! package loads anyway, rather than a second binary beside it in the wheel.
//!
//! The contract: the command behaves as the binary does. It reads the process's own stdin
//! and writes its stdout and stderr (no Python file object in between), answers with the
//! binary's exit status, and runs with the GIL released. Signals are the script's part:
//! it gives SIGINT back its default action before calling in, as a binary starts with, so
//! `atfunc serve` stops on Ctrl-C through its own handler and any other command ends at
//! once.

use pyo3::prelude::*;
use std::ffi::OsString;
use std::process::ExitCode;

/// Runs the `atfunc` command line with `argv` (`sys.argv`: the program's name first) and
/// returns its exit status. What the `atfunc` script installed with the package calls; not
/// part of the API.
#[pyfunction]
pub(crate) fn _run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    let code = py.detach(|| atfunc_cli::run(argv));
    status(code)
}

/// The number an [`ExitCode`] stands for. `ExitCode` has no accessor; the command's codes
/// are all made from a `u8`, so the one that compares equal is it.
fn status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_read_back() {
        for n in 0..=u8::MAX {
            assert_eq!(status(ExitCode::from(n)), n);
        }
        assert_eq!(status(ExitCode::SUCCESS), 0);
        assert_eq!(status(ExitCode::FAILURE), 1);
    }
}
