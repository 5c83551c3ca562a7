"""The examples in the package's docstrings run."""

import doctest

import atfunc


def test_the_module_docstring_example_runs():
    failed, tried = doctest.testmod(atfunc, verbose=False)
    assert tried > 0 and failed == 0
