"""Runs `pod-tailor` command lines in one process started with `python -X dev` (hidden warnings such as
ResourceWarning shown), each with its own stdout and stderr, and prints what each did as JSON.

tests/cli/test_first_hour.py starts it: one interpreter for every case instead of one per case.
Usage: python -X dev tests/cli/devmode.py '[["preview", "-f", "x"], ...]'
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import sys
import traceback
import warnings


def run_one(argv: list[str]) -> dict[str, object]:
    from webhook.commands import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("default")  # every warning shown once, ResourceWarning included
        try:
            code: object = main(argv)
        except SystemExit as exited:
            code = exited.code
        except BaseException:  # what a person would see as a traceback
            traceback.print_exc()
            code = "traceback"
        gc.collect()  # an unclosed file or socket warns now, inside this case
    return {"argv": argv, "code": code, "out": out.getvalue(), "err": err.getvalue()}


if __name__ == "__main__":
    print(json.dumps([run_one(argv) for argv in json.loads(sys.argv[1])]))
