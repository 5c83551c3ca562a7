#!/usr/bin/env python3
"""The demo's two command tools, offline and deterministic: the arguments arrive as one
JSON object on stdin, the answer goes to stdout, a failure to stderr with a non-zero exit
status (atfunc gives the model that message to correct its call)."""
import json
import sys


def weather(args):
    city = str(args.get("location", "")).strip()
    if not city:
        raise ValueError("location is empty: give a city name")
    # A made-up but stable reading, so the demo prints the same every time.
    celsius = sum(city.lower().encode()) % 30
    unit = args.get("unit") or "celsius"
    temperature = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return {"location": city, "temperature": temperature, "unit": unit, "sky": "overcast"}


def power(args):
    return args["base"] ** args["exponent"]


def main():
    tool = {"weather": weather, "power": power}[sys.argv[1]]
    try:
        print(json.dumps(tool(json.load(sys.stdin))))
    except (ValueError, KeyError, OverflowError) as error:
        sys.stderr.write(f"{error}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
