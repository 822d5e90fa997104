"""What the drawable summaries cost a profile build, and what they add to the ConfigMap store.

On the history `bench/profiles.py --prepare --keep DIR` backfilled, starts Prometheus and runs full
`pod-tailor profiles build`s (no checkpoint, so each reads the whole window) in child processes,
alternating `--summary-days 0` and `--summary-days 7` for `--rounds` rounds, and prints each build's
time and query count, then the largest namespace's ConfigMap payload with and without summaries
(plain JSON and gzip, against the 1 MiB object limit). Printed as measured.

    .venv/bin/python bench/profiles.py --workloads 200 --keep /tmp/b200 --prepare
    .venv/bin/python bench/summaries.py --keep /tmp/b200 --resolution 300
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "profiles"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package, which promserver imports

from promserver import PromServer

from webhook.profiles.store import FileStore, encode_document


def _build(command: list[str], store: Path, days: int) -> tuple[float, int]:
    env = dict(os.environ, POD_TAILOR_PROFILES=str(store))
    started = time.monotonic()
    result = subprocess.run([*command, "--summary-days", str(days)], env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(result.stderr[-2000:])
    queries = int(result.stdout.split(" using ")[1].split()[0])
    return seconds, queries


def _largest(store: Path) -> tuple[str, int, int]:
    document = FileStore(store).read()
    sizes = []
    for namespace in sorted(document.namespaces()):
        text = json.dumps(encode_document(document.only(namespace)), separators=(",", ":"))
        sizes.append((len(text), namespace, len(gzip.compress(text.encode(), compresslevel=6))))
    plain, namespace, packed = max(sizes)
    return namespace, plain, packed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--keep", type=Path, required=True, help="the directory bench/profiles.py --keep used"
    )
    parser.add_argument("--resolution", type=int, default=300)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    step = args.resolution
    with PromServer(args.keep / "data", extra_args=("--storage.tsdb.max-block-duration=1d",)) as server:
        command = [
            sys.executable,
            "-m",
            "webhook",
            "profiles",
            "build",
            "--prometheus-url",
            server.url,
            "--window",
            f"{args.days}d",
            "--step",
            f"{step}s",
            "--rate-window",
            f"{2 * step}s",
            "--startup-window",
            str(max(300, 4 * step)),
            "--end",
            (args.keep / "end").read_text(),
            "--no-checkpoint",
            "-q",
        ]
        times: dict[int, list[float]] = {0: [], 7: []}
        counts: dict[int, int] = {}
        for round_ in range(args.rounds):
            for days in (0, 7) if round_ % 2 == 0 else (7, 0):
                seconds, counts[days] = _build(command, args.keep / f"store-{days}.json", days)
                times[days].append(seconds)
                print(
                    f"  round {round_ + 1}: --summary-days {days}: {seconds:6.1f} s, {counts[days]} queries"
                )
    for days in (0, 7):
        print(
            f"--summary-days {days}: median {statistics.median(times[days]):.1f} s over {args.rounds} full"
            f" builds, {counts[days]} queries"
        )
    extra = statistics.median(times[7]) - statistics.median(times[0])
    print(
        f"summaries cost {extra:+.1f} s ({extra / statistics.median(times[0]):+.0%}) and "
        f"{counts[7] - counts[0]} queries per build"
    )
    for days in (0, 7):
        namespace, plain, packed = _largest(args.keep / f"store-{days}.json")
        print(
            f"largest namespace ({namespace}) with --summary-days {days}: {plain / 1024:.0f} KiB of JSON, "
            f"{packed / 1024:.0f} KiB gzipped (a ConfigMap holds 1024 KiB; pod-tailor gzips past 900)"
        )


if __name__ == "__main__":
    main()
