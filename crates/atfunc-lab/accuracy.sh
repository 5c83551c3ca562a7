#!/bin/sh
# The accuracy table of EVAL.md and the README: every BFCL category in tests/data/bfcl in
# every mode, written as JSON, a Markdown table and an SVG chart. Resumable: run the same
# command again after an interruption and it asks only the cases not yet answered.
#
#   crates/atfunc-lab/accuracy.sh PROMPT_URL [NATIVE_URL]
#
# PROMPT_URL serves the prompt modes (text, repair, grammar, auto, lazy) on a plain ChatML
# template; NATIVE_URL, when given, serves `native` on a function-calling template (say
# llama-cpp-python's `--chat_format chatml-function-calling`). `lazy` needs llama.cpp's
# own llama-server (it reads `grammar_lazy`).
#
# Settings, from the environment:
#   OUT          where the report goes (default target/accuracy): accuracy.json, .md, .svg
#   ATFUNC_LAB   the lab's binary (default: target/release/atfunc-lab, built by
#                cargo build --release -p atfunc-lab)
#   MODES        prompt modes on the call categories (default
#                grammar,grammar+spans,auto,lazy,text,repair)
#   NO_CALL_MODES  prompt modes on irrelevance (default auto,lazy,text: grammar and repair
#                ask for a call, so they score 0 there by construction; empty: none)
#   LIMIT        only the first LIMIT cases of each file (a subset: the table says "n of N")
#   SIMPLE_LIMIT the same for simple_python only (default LIMIT)
#   CONCURRENCY  requests in flight (default 2, one per server slot)
#   TIMEOUT      seconds one case may take (default 600)
#   MAX_TOKENS   max_tokens of each request (default 256)
#   STOP_AT_REPEAT  1 (default): the prompt modes' answers are streamed and dropped at
#                their first repeated call (--stop-at-repeat: the same calls, far less time
#                on parallel); 0 for a server that refuses llama.cpp's `timings_per_token`
#   PROMPT_NOTE  how PROMPT_URL is served (recorded per mode in the report)
#   NATIVE_NOTE  how NATIVE_URL is served
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 PROMPT_URL [NATIVE_URL]" >&2
    exit 2
fi
PROMPT_URL=$1
NATIVE_URL=${2:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
data=$here/tests/data/bfcl
OUT=${OUT:-$here/target/accuracy}
ATFUNC_LAB=${ATFUNC_LAB:-$here/target/release/atfunc-lab}
MODES=${MODES:-grammar,grammar+spans,auto,lazy,text,repair}
NO_CALL_MODES=${NO_CALL_MODES-auto,lazy,text}
CONCURRENCY=${CONCURRENCY:-2}
TIMEOUT=${TIMEOUT:-600}
MAX_TOKENS=${MAX_TOKENS:-256}
STOP_AT_REPEAT=${STOP_AT_REPEAT:-1}
PROMPT_NOTE=${PROMPT_NOTE:-$PROMPT_URL}
NATIVE_NOTE=${NATIVE_NOTE:-$NATIVE_URL}
mkdir -p "$OUT"

# Every run writes into the same report; each one adds its modes and cases to it.
# (sh has no local variables: the names here are the function's own.)
run() { # URL NOTE MODES LIMIT FILE...
    run_url=$1 run_note=$2 run_modes=$3 run_limit=$4
    shift 4
    args=""
    if [ "$STOP_AT_REPEAT" = 1 ] && [ "$run_url" = "$PROMPT_URL" ]; then
        args=--stop-at-repeat
    fi
    for name in "$@"; do
        args="$args --questions $data/BFCL_v4_$name.json"
        if [ -f "$data/possible_answer/BFCL_v4_$name.json" ]; then
            args="$args --answers $data/possible_answer/BFCL_v4_$name.json"
        fi
    done
    # shellcheck disable=SC2086
    "$ATFUNC_LAB" eval --endpoint "$run_url" --server-note "$run_note" --mode "$run_modes" \
        --concurrency "$CONCURRENCY" --timeout "$TIMEOUT" --max-tokens "$MAX_TOKENS" \
        ${run_limit:+--limit $run_limit} $args \
        --json "$OUT/accuracy.json" --markdown "$OUT/accuracy.md" --chart "$OUT/accuracy.svg"
}

limit=${LIMIT:-}
simple_limit=${SIMPLE_LIMIT:-$limit}
run "$PROMPT_URL" "$PROMPT_NOTE" "$MODES" "$simple_limit" simple_python
run "$PROMPT_URL" "$PROMPT_NOTE" "$MODES" "$limit" multiple parallel parallel_multiple
if [ -n "$NO_CALL_MODES" ]; then
    run "$PROMPT_URL" "$PROMPT_NOTE" "$NO_CALL_MODES" "$limit" irrelevance
fi
if [ -n "$NATIVE_URL" ]; then
    run "$NATIVE_URL" "$NATIVE_NOTE" native "$simple_limit" simple_python
    run "$NATIVE_URL" "$NATIVE_NOTE" native "$limit" multiple parallel parallel_multiple irrelevance
fi
echo "report: $OUT/accuracy.json, $OUT/accuracy.md, $OUT/accuracy.svg"
