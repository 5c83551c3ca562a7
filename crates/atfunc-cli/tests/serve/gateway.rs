//! The gateway (`atfunc serve`) against the official `openai` Python client and a scripted
//! OpenAI-compatible upstream: `python3 -m pytest crates/atfunc-cli/tests/gateway`, run on the binary cargo
//! built. The Python packages come from `crates/atfunc-cli/tests/gateway/requirements.txt` (`.ci/run`
//! installs them); the test is skipped, saying so, only when `python3` or the `openai`
//! package is missing (a missing `pytest` fails it).

use crate::missing;

use std::path::Path;
use std::process::Command;

#[test]
fn gateway_against_the_openai_client() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("PYTHON").unwrap_or_else(|_| String::from("python3"));
    match Command::new(&python).args(["-c", "import openai"]).output() {
        Err(error) => {
            missing::missing(
                "gateway tests",
                &format!("`{python}` cannot run ({error})"),
                "install Python 3 with pip",
            );
            return;
        }
        Ok(output) if !output.status.success() => {
            missing::missing(
                "gateway tests",
                &format!(
                    "the `openai` Python package is missing: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                ),
                "pip install -r crates/atfunc-cli/tests/gateway/requirements.txt",
            );
            return;
        }
        Ok(_) => {}
    }
    let status = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/gateway",
        ])
        // The crate's folder: pytest finds `tests/gateway` and its conftest there.
        .current_dir(root)
        .env("ATFUNC_BIN", env!("CARGO_BIN_EXE_atfunc"))
        .status()
        .expect("pytest starts");
    assert!(status.success(), "the gateway tests failed: {status}");
}
