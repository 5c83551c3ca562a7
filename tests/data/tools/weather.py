#!/usr/bin/env python3
"""A command tool for the tests: reads one JSON object on stdin, answers on stdout.

The first argument picks the behaviour:
  temp  the temperature of `location` as JSON; "Atlantis" fails with exit status 3
  text  a line of plain text
  echo  what arrived: the JSON object, the fixed arguments, the function's name, the folder
  env   whether the variables named in `names` are set, and their values
  noisy writes 5,000 lines to stderr, then "the end", and exits with status 2
  hang  writes its process id to the file `pidfile`, then sleeps for a minute
  big   writes `bytes` bytes to stdout
Only the standard library is used.
"""
import json
import os
import sys
import time


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "temp"
    args = json.loads(sys.stdin.read() or "{}")
    if mode == "temp":
        location = args.get("location", "")
        if location == "Atlantis":
            sys.stderr.write("no such city: Atlantis\n")
            return 3
        print(json.dumps({"location": location, "temp": 21, "unit": args.get("unit", "celsius")}))
    elif mode == "text":
        print("Sunny in %s" % args.get("location", "nowhere"))
    elif mode == "echo":
        print(json.dumps({
            "stdin": args,
            "argv": sys.argv[2:],
            "function": os.environ.get("ATFUNC_FUNCTION"),
            "call_id": os.environ.get("ATFUNC_CALL_ID"),
            "cwd": os.getcwd(),
        }))
    elif mode == "env":
        names = args.get("names", [])
        print(json.dumps({name: os.environ.get(name) for name in names}))
    elif mode == "noisy":
        for i in range(5000):
            sys.stderr.write("noise line %d\n" % i)
        sys.stderr.write("the end\n")
        return 2
    elif mode == "hang":
        with open(args["pidfile"], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(60)
    elif mode == "big":
        sys.stdout.write("x" * int(args.get("bytes", 2 * 1024 * 1024)))
    else:
        sys.stderr.write("unknown mode %s\n" % mode)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main())
