#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Replace the "Latest results" table of tools/bench/README.

    readme_table.py README RESULTS.txt HEADLINE

make bench's complete run calls this with its results.txt: everything
between the section's underline and the next paragraph that starts with
"What limits these figures" becomes HEADLINE, a blank line and the table,
indented by three spaces. There is one table, replaced each time.
"""
import sys

SECTION = "Latest results\n--------------\n\n"
NEXT = "\nWhat limits these figures"


def main():
    if len(sys.argv) != 4:
        sys.stderr.write("usage: readme_table.py README RESULTS.txt HEADLINE\n")
        return 2
    path, results, headline = sys.argv[1:]
    with open(path) as f:
        text = f.read()
    start = text.find(SECTION)
    end = text.find(NEXT, start)
    if start < 0 or end < 0:
        sys.stderr.write("readme_table.py: no %r section ending at %r in %s\n"
                         % (SECTION.split("\n")[0], NEXT.strip(), path))
        return 1
    start += len(SECTION)
    with open(results) as f:
        rows = ["   " + line if line.strip() else "\n" for line in f]
    text = text[:start] + headline + "\n\n" + "".join(rows) + text[end:]
    with open(path, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
