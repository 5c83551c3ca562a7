#!/usr/bin/env python3
"""A command tool for atfunc: the arguments arrive as one JSON object on stdin, the answer
goes to stdout, a failure goes to stderr with a non-zero exit status. Works offline: the
forecast is made up from the city's name."""
import json
import sys


def main():
    args = json.load(sys.stdin)
    city = str(args.get("location", "")).strip()
    if not city:
        sys.stderr.write("location is empty: give a city name\n")
        return 2
    # A stable, made-up temperature, so the example prints the same every time.
    celsius = sum(city.lower().encode()) % 30
    unit = args.get("unit", "celsius")
    temp = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    print(json.dumps({"location": city, "temperature": temp, "unit": unit}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
