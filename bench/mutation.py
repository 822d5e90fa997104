"""Mutation testing of the decision core and the admission contract (mutmut): which changed operators,
constants and calls no test notices. A bench, not CI: it takes minutes to an hour on two shared cores.

mutmut is installed at run time into a bench-only virtualenv outside the repository
(`~/.cache/pod-tailor/bench-mutation`, with a `.pth` to this repository's `.venv` for the project's own
dependencies); the tracked files are copied to a scratch directory (with `../shared` linked beside it)
and mutated there, never here. Each mutant runs only the tests that reached the mutated function (mutmut
maps them once), taken from the pure test folders listed in `TESTS`.

Prints, per module, the mutants made, killed and survived and the survival rate; then every survivor
with its diff. Survivors known to be equivalent (no input can tell them from the original) are listed in
`EQUIVALENT` with the reason, matched by module and changed lines, and are counted apart.

    .venv/bin/python bench/mutation.py                                  # webhook/core and webhook/admission
    .venv/bin/python bench/mutation.py --only 'webhook/core/model/qos.py' --only 'webhook/admission/*'
    .venv/bin/python bench/mutation.py --only 'webhook/core/model/qos.py' --again  # survivors only, new tests
    .venv/bin/python bench/mutation.py --only webhook/core/model/qos.py --tests tests/engine --max-examples 20

On two shared cores the whole of `TESTS` is too slow to map (mutmut runs it twice before the first mutant,
under its trampolines): `--tests` narrows the selection to the folders that exercise the module, and
`--max-examples` caps every Hypothesis property (a narrower or shorter run can only add survivors, never
hide one: a survivor is then tried against the fuller selection before a test is written for it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pod-tailor" / "bench-mutation"
MUTMUT = "mutmut==3.8.1"
MUTATED = ("webhook/core/*", "webhook/admission/*")
DECIDED = "decided-before-again.json"  # in the workdir: what the run before an `--again` decided
# Pure, in-process tests only: no server threads or subprocesses inside a forked mutant.
TESTS = (
    "tests/engine", "tests/autoscalers", "tests/boost", "tests/traffic",
    "tests/server/test_contract.py", "tests/server/test_bounds.py", "tests/server/test_peek.py",
    "tests/server/test_verdict_cache.py",
)

_PATCHCHECK = "webhook/admission/patchcheck.py"
_RESOURCES = "webhook/core/sizing/resources.py"
_STEPS = "# LimitRanger divides as floats: at exactly the ratio it may round over it"
_APPLY = "jsonpatch.apply_patch(orjson.loads(orjson.dumps(pod)), list(ops), "
_FORGET = "for path in [path for path in added if len(path) {} depth and path[:depth] == tokens]:"
_GET = "return node.get(token, {})"

# (module, the mutant's changed lines as "-old" / "+new", stripped) -> why no input can tell it apart.
EQUIVALENT: dict[tuple[str, tuple[str, ...]], str] = {
    ("webhook/core/model/qos.py", ("-guaranteed = False", "+guaranteed = None")):
        "None and False are both false where `guaranteed` is read",
    ("webhook/core/model/qos.py", ('-section, _, name = item.field.partition(".")',
                             '+section, _, name = item.field.rpartition(".")')):
        "a field counted here (requests.cpu, limits.memory) has one dot; a dotted resource name"
        " (requests.example.com/gpu) is counted by neither",
    ("webhook/admission/cache.py", ("-self._cluster: ClusterSnapshot | None = None",
                                    '+self._cluster: ClusterSnapshot | None = ""')):
        "no snapshot `is` either, so the first key empties an empty cache in both",
    ("webhook/admission/cache.py", ("-self._profiles: ProfileSnapshot | None = None",
                                    '+self._profiles: ProfileSnapshot | None = ""')):
        "no snapshot `is` either, so the first key empties an empty cache in both",
    **{
        (_PATCHCHECK, (f"-{_APPLY}in_place=True)", f"+{_APPLY}{after}")):
            "the patch is applied to a copy made just before: jsonpatch's own copy (in_place False) only"
            " costs time"
        for after in ("in_place=None)", ")", "in_place=False)")
    },
    **{
        (_PATCHCHECK, ("-" + _GET.format("_MISSING"), "+" + _GET.format(default))):
            "a missing member read as None: neither a dict nor a list, so the op is refused alike (a"
            " member that holds null is None already)"
        for default in ("None", "")
    },
    (_PATCHCHECK, ("-found = walked.get(tokens, _MISSING)", "+found = walked.get(None, _MISSING)")):
        "the memo of walked parents never hits: every parent is walked again, at a cost in time only",
    **{
        (_PATCHCHECK, ("-if start == 0:", f"+{test}")):
            "the memo also keeps (or only keeps) parents found through added values; it is read only when"
            " no prefix of the pointer was added, and an added prefix is only ever replaced by a shorter"
            " one, so such an entry is never read back"
        for test in ("if start != 0:", "if start == 1:")
    },
    (_PATCHCHECK, ("-" + _FORGET.format(">"), "+" + _FORGET.format(">="))):
        "the replaced path itself is forgotten too, and stored again on the next line",
    (_RESOURCES, ('-return None, ""', '+return None, "XXXX"')):
        "the note of no limit: the caller reads a limit's note only when there is a limit",
    (_RESOURCES, ("-value = max(request, _round(resource, request * bounds.max_ratio, up=False))",
                  "+value = max(request, _round(resource, request * bounds.max_ratio, up=None))")):
        "`up` is only tested for truth: None rounds down as False does",
    (_RESOURCES, ("-if bounds.max_ratio is not None and request > 0:",
                  "+if bounds.max_ratio is not None and request >= 0:")):
        "with a zero request the ratio above has already set the limit to 0, so the loop stops at once"
        " on `value <= request`",
    (_RESOURCES, ("-if value <= request or not ratio_breached(request, value, bounds.max_ratio):",
                  "+if value < request or not ratio_breached(request, value, bounds.max_ratio):")):
        "a limit equal to its request is a ratio of 1, which no maxLimitRequestRatio (at least 1) breaks;"
        " were it breached, the step below the request is undone by the final `max(value, request)`",
    **{
        (_RESOURCES, (f"-{line.format('False')}", f"+{line.format('None')}")):
            "None and False are both false wherever `from_profile` / `recommended` is read"
        for line in (
            "return _Candidate(rules.request, f'from policy \"{{policy.name}}\"; {{hold.reason}}', {},"
            " held=True)",
            "return _Candidate(rules.request, _fallback_source(policy, profile, False), {})",
            "return _Candidate(rules.request, _fallback_source(policy, profile, {}), False)",
        )
    },
    (_RESOURCES, ('-else (request, "")', '+else (request, "XXXX")')):
        "the note of a request that is not ours: read only when the request is ours",
    (_RESOURCES, ('-else (None, "")', '+else (None, "XXXX")')):
        "the note of a limit that is not ours: read only when there is a new limit",
    (_RESOURCES, ("-if not request_is_ours and candidate.from_profile and candidate.value > limit_base:",
                  "+if not request_is_ours and candidate.from_profile and candidate.value >= limit_base:")):
        "history equal to the person's request: the limit is derived from the same number either way",
    (_RESOURCES, (f"-for _ in range(3):  {_STEPS}", f"+for _ in range(4):  {_STEPS}")):
        "in practice only: LimitRanger's float division is off by at most one step for every memory limit"
        " it can judge (int64 milli-values) and for cpu below about 10^12 cores; a fourth step is never"
        " taken for a Pod any node could hold",
    ("webhook/core/serving/probes.py",
     ("-return f\"{kind}Probe\", {handler: copy.deepcopy(dict(probe[handler]))}",
      "+return f\"{kind}Probe\", {handler: copy.copy(dict(probe[handler]))}")):
        "the reused handler goes into the patch, which is encoded and never changed in place: a shallow"
        " copy shares only nested values that nothing writes",
    **{
        ("webhook/core/serving/shutdown.py", ("-major, minor = facts.server_version or (0, 0)",
                                      f"+major, minor = facts.server_version or {fallback}")):
            "read only when `supports_native_sleep()` is not None, i.e. the version is known: the fallback"
            " (for the type checker) is never used"
        for fallback in ("(1, 0)", "(0, 1)")
    },
}


def bench_python() -> Path:
    """The bench venv's python, created (with mutmut, and a .pth to the project's venv) on first use."""
    python = BENCH_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {BENCH_VENV} with {MUTMUT}", file=sys.stderr)
        venv.create(BENCH_VENV, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", MUTMUT], check=True)
    project = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    own = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    (Path(own) / "pod-tailor-project.pth").write_text(project + "\n")
    return python


def scratch_copy(workdir: Path, *, fresh: bool = True, max_examples: int | None = None) -> Path:
    """The tracked files copied to `workdir/repo`, with `../shared` linked beside its tests.

    Not `fresh`: copied over the previous run's copy, whose mutants and test map mutmut keeps.
    `max_examples`: every Hypothesis property runs at most this many examples.
    """
    if fresh and workdir.exists():
        shutil.rmtree(workdir)
    repo = workdir / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    # mutmut runs the tests from repo/mutants, so tests/shared.py looks for repo/shared. The corpus is
    # beside the clone (../shared), or beside the main checkout for a worktree under /work/wt/.
    for shared in (ROOT.parent / "shared", ROOT.parents[1] / "shared"):
        if shared.is_dir() and not (repo / "shared").exists():
            (repo / "shared").symlink_to(shared)
            break
    # The same test runs twice in mutmut's process (its stats, then a clean run): Hypothesis would take
    # the second instance of a test class for a different executor. Deadlines do not fit trampolines.
    # A test's own `@settings(suppress_health_check=...)` replaces the profile's list, so each collected
    # property gets the two added to its own settings as well.
    cap = "" if max_examples is None else f", max_examples=min(own.max_examples, {max_examples})"
    profile_cap = "" if max_examples is None else f", max_examples={max_examples}"
    with (repo / "tests" / "conftest.py").open("a") as conftest:
        conftest.write(
            "\n\nfrom hypothesis import HealthCheck as _Check, settings as _settings  # bench/mutation.py\n"
            "_BENCH_SUPPRESSED = [_Check.differing_executors, _Check.too_slow]\n"
            "_settings.register_profile('mutmut', suppress_health_check=_BENCH_SUPPRESSED, deadline=None"
            f"{profile_cap})\n"
            "_settings.load_profile('mutmut')\n"
            "\n\ndef pytest_collection_modifyitems(items):  # bench/mutation.py\n"
            "    for item in items:\n"
            "        test = getattr(getattr(item, 'obj', None), '__func__', getattr(item, 'obj', None))\n"
            "        own = getattr(test, '_hypothesis_internal_use_settings', None)\n"
            "        if own is not None:\n"
            "            suppressed = [*own.suppress_health_check, *_BENCH_SUPPRESSED]\n"
            "            test._hypothesis_internal_use_settings = _settings(\n"
            f"                own, suppress_health_check=suppressed, deadline=None{cap})\n"
        )
    return repo


def configure(repo: Path, only: list[str], tests: list[str] | tuple[str, ...] = TESTS) -> None:
    """mutmut's settings in the copy's setup.cfg (lists as indented continuation lines)."""

    def listed(values: list[str] | tuple[str, ...]) -> str:
        return "".join(f"\n    {value}" for value in values)

    (repo / "setup.cfg").write_text(
        "[mutmut]\n"
        "source_paths=webhook/\n"
        f"only_mutate={listed(only)}\n"
        f"also_copy={listed(['webhook/data/', 'bench/'])}\n"  # tests import bench helpers
        f"pytest_add_cli_args={listed(['-p', 'no:cacheprovider'])}\n"
        f"pytest_add_cli_args_test_selection={listed(tests)}\n"
    )


def mutmut(python: Path, repo: Path, *args: str, check: bool = True) -> str:
    command = [str(python), "-m", "mutmut", *args]
    result = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    if check and result.returncode != 0:
        shown = re.sub(r"[^\n]*\r", "", result.stdout)[-3000:]  # without the progress lines
        raise SystemExit(f"{' '.join(command)} failed:\n{shown}\n{result.stderr[-3000:]}")
    return result.stdout


def results(python: Path, repo: Path) -> dict[str, str]:
    """Each mutant's status in the workdir: killed, survived, no tests, timeout, ...

    A mutant an `--again` run did not try again ("not checked" once mutmut re-maps the tests) keeps the
    status the run before decided.
    """
    statuses: dict[str, str] = {}
    for line in mutmut(python, repo, "results", "--all", "true").splitlines():
        found = re.match(r"\s*(\S+): (.+)$", line)
        if found:
            statuses[found[1]] = found[2].strip()
    decided_file = repo.parent / DECIDED
    decided = json.loads(decided_file.read_text()) if decided_file.exists() else {}
    return {name: decided.get(name, status) if status == "not checked" else status
            for name, status in statuses.items()}


def module_of(mutant: str) -> str:
    """`webhook.core.model.qos.x_f__mutmut_3` -> `webhook/core/model/qos.py`."""
    dotted = mutant.split(".x", 1)[0] if ".x" in mutant else mutant.rsplit(".", 1)[0]
    return dotted.replace(".", "/") + ".py"


def changed_lines(diff: str) -> tuple[str, ...]:
    return tuple(
        line[0] + line[1:].strip()
        for line in diff.splitlines()
        if line[:1] in "-+" and not line.startswith(("---", "+++"))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="glob of modules to mutate (repeatable)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=BENCH_VENV.parent / "mutation-run")
    parser.add_argument("--again", action="store_true",
                        help="after adding tests: run again only the previous run's survivors (same workdir"
                             " and --only), the new tests mapped first")
    parser.add_argument("--tests", action="append",
                        help=f"test folder or file the mutants meet (repeatable; default {' '.join(TESTS)})")
    parser.add_argument("--max-examples", type=int, help="cap on every Hypothesis property's examples")
    parser.add_argument("--report", action="store_true",
                        help="only print the workdir's results (a run cut short keeps what it decided)")
    options = parser.parse_args()
    only = options.only or list(MUTATED)
    tests = options.tests or list(TESTS)

    started = time.monotonic()
    python = bench_python()
    if options.report:
        return report(python, options.workdir / "repo", only=only, tests=tests, seconds=0.0,
                      max_examples=options.max_examples)
    again = options.again and (options.workdir / "repo" / "mutants").is_dir()
    previous: list[str] = []
    if again:
        earlier = results(python, options.workdir / "repo")
        previous = [name for name, status in earlier.items() if status == "survived"]
        # mutmut forgets the other mutants' results when the test selection changes: kept for the report.
        decided = {name: status for name, status in earlier.items() if status != "survived"}
        (options.workdir / DECIDED).write_text(json.dumps(decided, indent=0, sort_keys=True))
    repo = scratch_copy(options.workdir, fresh=not again, max_examples=options.max_examples)
    configure(repo, only, tests)
    if not again or previous:
        mutmut(python, repo, "run", "--max-children", str(options.max_children), *previous)
    return report(python, repo, only=only, tests=tests, seconds=time.monotonic() - started,
                  max_examples=options.max_examples)


def report(python: Path, repo: Path, *, only: list[str], tests: list[str], seconds: float,
           max_examples: int | None) -> int:
    """The per-module table, then every survivor with its diff (equivalents with the reason)."""
    statuses = results(python, repo)
    per_module: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: list[tuple[str, str, str | None]] = []
    for name, status in sorted(statuses.items()):
        module = module_of(name)
        if status == "survived":
            diff = mutmut(python, repo, "show", name)
            reason = EQUIVALENT.get((module, changed_lines(diff)))
            status = "equivalent" if reason else status
            survivors.append((name, diff, reason))
        per_module[module][status] += 1

    capped = f" (Hypothesis at most {max_examples} examples)" if max_examples else ""
    print(f"mutmut over {', '.join(only)}; tests from {', '.join(tests)}{capped}; {seconds / 60:.1f} min")
    print(f"{'module':<40} {'mutants':>7} {'killed':>7} {'survived':>8} {'equiv.':>6} {'other':>6} "
          f"{'survival':>8}")
    totals: Counter[str] = Counter()
    for module, counts in [*sorted(per_module.items()), ("all", totals)]:
        if module != "all":
            totals.update(counts)
        made = sum(counts.values())
        other = made - counts["killed"] - counts["survived"] - counts["equivalent"]
        rate = counts["survived"] / made if made else 0.0
        print(f"{module:<40} {made:>7} {counts['killed']:>7} {counts['survived']:>8} "
              f"{counts['equivalent']:>6} {other:>6} {rate:>8.1%}")
    print("\nsurvival: survived (equivalents apart) over all mutants; other: no test reached the mutant, or"
          " it timed out (`mutmut results` in the workdir)\n")
    for name, diff, reason in survivors:
        print(f"== {name}: {'equivalent: ' + reason if reason else 'SURVIVED'}")
        print("\n".join(line for line in diff.splitlines()
                        if line[:1] in "-+" and line[:3] not in ("---", "+++")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
