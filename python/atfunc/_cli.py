"""The ``atfunc`` command that ``pip install atfunc`` installs: the command line of the
Rust crate (``atfunc serve``, ``atfunc parse``, ...), run inside the package's extension
module. It behaves as the ``atfunc`` binary built with cargo: the same arguments, output,
exit status and signals.
"""

import signal
import sys
from typing import NoReturn

from ._atfunc import _run_cli


def main() -> NoReturn:
    """Runs ``atfunc`` with the arguments of this process and exits with its status."""
    # Python turns Ctrl-C into KeyboardInterrupt, which would only surface once the
    # command returned. A binary starts with the default action instead: `atfunc serve`
    # sets its own handler over it and stops cleanly, any other command ends at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_run_cli(sys.argv))


if __name__ == "__main__":
    main()
