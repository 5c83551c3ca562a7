"""``python -m atfunc ...``: the ``atfunc`` command (see ``atfunc._cli``)."""

from ._cli import main

# Only when run: a tool that imports every module of the package (mypy's stubtest) must
# not start the command.
if __name__ == "__main__":
    main()
