"""The UNSUPPORTED site notes of a JSON report, grouped by the cause their reason names.

    idxcheck scan TREE --format json -o report.json
    python -m bench.unsupported_reasons report.json [--top 12] [--examples]

A reason names the first thing the interpreter could not model (`call to `x.sum().item``:
tensor method `sum` is not modelled`); the cause is its last clause with the code's names
replaced by placeholders, so that one cause counts once however many names it meets. Each
note is a site and the modes it is UNSUPPORTED in (the report's `sites`); the obligations
behind them are in the report's `stats`."""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

# `code` spans and quoted names become placeholders; numbers too.
_CODE = re.compile(r"`[^`]*`")
_NUMBER = re.compile(r"\b\d+\b")


def cause(reason: str) -> str:
    """The cause of a reason: its last `: `-separated clause, names replaced."""
    last = reason.rsplit(": ", 1)[-1]
    return _NUMBER.sub("N", _CODE.sub("`…`", last)).strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("report", type=Path)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--examples", action="store_true", help="one reason of each cause")
    options = parser.parse_args()
    doc = json.loads(options.report.read_text())
    notes = [s for s in doc.get("sites", []) if s.get("verdict") == "UNSUPPORTED"]
    counts: Counter[str] = Counter(cause(s["reason"]) for s in notes)
    example: dict[str, str] = {}
    for s in notes:
        example.setdefault(cause(s["reason"]), s["reason"])
    stats = doc.get("stats", {})
    print(
        f"{len(notes)} UNSUPPORTED site notes; {stats.get('unsupported', '?')} UNSUPPORTED "
        f"obligations of {stats.get('obligations', '?')}"
    )
    print("| notes | cause |")
    print("|---|---|")
    for text, count in counts.most_common(options.top):
        shown = example[text] if options.examples else text
        print(f"| {count} | {shown.replace('|', '/')} |")


if __name__ == "__main__":
    main()
