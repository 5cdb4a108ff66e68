#!/usr/bin/env python3
"""Summarizes the "Paired" benchmarks of a package-benchmark text report as a Markdown table.

    swift package --disable-sandbox benchmark --filter "Loopback nginx.*" --no-progress | tee run.txt
    Benchmarks/Scripts/paired-summary.py run.txt [more runs ...]

One row a benchmark: the throughput ratio's median and interquartile range (p25-p75, per iteration, see
Benchmarks/CourierBenchmarks/Paired.swift), the baseline's and the candidate's per-call medians, and the number of
iterations. With several reports, one column group a report, in the order given.
"""

import re
import sys

METRICS = {
    "baseline ns/call": "baseline",
    "candidate ns/call": "candidate",
    "throughput ratio": "ratio",
}
SCALES = {"": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000}


def parse(path):
    """Returns {benchmark name: {metric: (p25, p50, p75, samples)}} in the report's order."""
    results = {}
    name = None
    with open(path, encoding="utf-8") as report:
        for line in report:
            line = line.rstrip("\n")
            if line and not line.startswith(("│", "╒", "╞", "├", "╘", "=")) and "│" not in line:
                name = line.strip()
                continue
            if name is None or not line.startswith("│"):
                continue
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            if len(cells) < 9:
                continue
            label = cells[0]
            for prefix, key in METRICS.items():
                if label.startswith(prefix):
                    scale = re.search(r"\((K|M|G)\)", label)
                    factor = SCALES[scale.group(1)] if scale else 1
                    values = [int(cell.replace(",", "")) * factor for cell in cells[1:8]]
                    # p0 p25 p50 p75 p90 p99 p100
                    results.setdefault(name, {})[key] = (values[1], values[2], values[3], int(cells[8]))
    return results


def microseconds(nanoseconds):
    return f"{nanoseconds / 1000:.0f}" if nanoseconds >= 10_000 else f"{nanoseconds / 1000:.1f}"


def main(paths):
    runs = [parse(path) for path in paths]
    names = [name for name in runs[0] if "ratio" in runs[0][name]]
    header = "| Benchmark |" + "".join(
        f" ratio p50 (p25–p75), run {i + 1} | bare / candidate µs, run {i + 1} | n |" for i in range(len(runs))
    )
    print(header)
    print("|" + " --- |" * (1 + 3 * len(runs)))
    for name in names:
        row = f"| {name} |"
        for run in runs:
            metrics = run.get(name)
            if not metrics or "ratio" not in metrics:
                row += " – | – | – |"
                continue
            # package-benchmark lists a metric that prefers larger values from its best quartile down.
            p25, p50, p75, samples = metrics["ratio"]
            p25, p75 = min(p25, p75), max(p25, p75)
            base = metrics["baseline"][1]
            cand = metrics["candidate"][1]
            row += f" **{p50 / 1000:.2f}** ({p25 / 1000:.2f}–{p75 / 1000:.2f}) |"
            row += f" {microseconds(base)} / {microseconds(cand)} | {samples} |"
        print(row)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
