"""The README's Python section tells a Python user what the package brings and needs: the
`atfunc` command, a Rust toolchain to build from source, pyarrow as an extra, and which
servers read the `grammar` field that `Toolbox.grammar()` fills."""

import re

from conftest import REPO


def section(text: str, heading: str) -> str:
    match = re.search(rf"(?ms)^## {heading}\n(.*?)(?=^## )", text)
    assert match, f"no section '## {heading}'"
    return match.group(1)


def test_the_readme_python_section_says_what_pip_install_brings_and_needs():
    python = section((REPO / "README.md").read_text(), "Python")
    assert "atfunc serve" in python, "the command the package installs"
    assert "cargo" in python and "Rust" in python, "the toolchain a source build needs"
    assert "atfunc[arrow]" in python or "python[arrow]" in python, "pyarrow, an extra"
    # The grammar field is llama.cpp's: the section names its readers, and no server that
    # ignores it.
    assert "grammar" in python and "llama-cpp-python" in python
    assert "Ollama" not in python


def test_the_python_page_names_no_server_that_ignores_the_grammar_field_as_one_that_reads_it():
    page = (REPO / "docs" / "python.md").read_text()
    assert "vLLM, Ollama" not in page
    assert "only llama.cpp's server and llama-cpp-python read" in page
