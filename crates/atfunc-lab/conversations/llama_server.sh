#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the llama.cpp sources that the llama-cpp-python
# 0.3.36 sdist vendors, for x86-64 with AVX2 and without AVX-512 (so the binary runs on any
# machine of the project's kind), and prints its path. Built once: a second run only prints
# the path of the binary already there.
#
#   bash crates/atfunc-lab/conversations/llama_server.sh
#
# Environment: ATFUNC_LLAMA_SERVER_DIR (where the binary goes, default
# ~/.cache/atfunc/llama-server-0.3.36-avx2), JOBS (parallel compile jobs, default 2).
set -euo pipefail

version=0.3.36
dest="${ATFUNC_LLAMA_SERVER_DIR:-$HOME/.cache/atfunc/llama-server-$version-avx2}"
jobs="${JOBS:-2}"
bin="$dest/llama-server"

if [[ -x "$bin" ]]; then
    echo "$bin"
    exit 0
fi

# cmake comes from PyPI when the machine has none (the wheel ships the binary).
if ! command -v cmake >/dev/null 2>&1; then
    echo "cmake not found; installing it from PyPI" >&2
    python3 -m pip install --quiet cmake >&2
    hash -r
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "downloading the llama-cpp-python $version sdist" >&2
# Only llama-cpp-python itself as source: pip still prepares its metadata, and with
# `--no-binary :all:` it would build every build dependency (cmake itself) from source.
python3 -m pip download --quiet --no-binary llama-cpp-python --no-deps --dest "$work" \
    "llama-cpp-python==$version" >&2
tar -xzf "$work"/llama_cpp_python-"$version".tar.gz -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"
[[ -f "$src/CMakeLists.txt" ]] || { echo "no llama.cpp sources in the sdist at $src" >&2; exit 1; }

# BUILD_SHARED_LIBS=OFF links libllama and ggml into the one binary, so it runs from
# wherever it is copied.
echo "configuring llama.cpp (AVX2, no AVX-512, no curl)" >&2
cmake -S "$src" -B "$work/build" \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_BMI2=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=ON \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF >&2
echo "building llama-server with $jobs jobs (a long while on two cores)" >&2
cmake --build "$work/build" --target llama-server -j "$jobs" >&2

built="$work/build/bin/llama-server"
[[ -x "$built" ]] || { echo "the build made no llama-server at $built" >&2; exit 1; }

mkdir -p "$dest.partial"
cp "$built" "$dest.partial/"

# No AVX-512 (zmm registers) nor AMX (tmm registers) anywhere in what was built.
if objdump -d "$dest.partial/llama-server" | grep -qE '%(zmm|tmm)'; then
    echo "the built llama-server uses AVX-512 or AMX instructions; refusing it" >&2
    exit 1
fi
echo "checked: no AVX-512 (zmm) or AMX (tmm) register in the binary" >&2

rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "$bin"
