"""The docs cannot name a flag that does not exist.

Every `pod-tailor VERB ... --flag` of README.md and docs/*.md, in code blocks (continued lines joined,
a console block's `$ ` dropped) and in inline code, is checked against VERB's own parser (`kubectl
pod-tailor preview` is `cluster-preview`); a flag named alone in prose (`--window 14d`) against the
verbs its paragraph, list or table, or its section's heading, names as `pod-tailor VERB`.
No verb keeps a hidden option (a deprecated alias), so a flag the parser knows is a current one.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from webhook.commands import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Flags that are no option of any verb, named beside one: flag -> why.
FOREIGN = {
    "--openreportsEnabled": "Kyverno's reports controller (docs/openreports.md)",
    "--prometheus-password": "shown refused: a password is a variable only (docs/prometheus-connection.md)",
}


@cache
def verbs() -> dict[str, frozenset[str]]:
    """`VERB` (or `profiles build`) -> every option string its parser takes."""
    found: dict[str, frozenset[str]] = {}

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        found[name] = frozenset(option for action in parser._actions for option in action.option_strings)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    walk(child, f"{name} {sub}".strip())

    walk(build_parser(), "")
    return found


def _names() -> str:
    return "|".join(sorted((re.escape(verb) for verb in verbs() if verb), key=len, reverse=True))


@cache
def command() -> re.Pattern[str]:
    """`pod-tailor VERB` (or `kubectl pod-tailor preview`) where a command starts, and what follows it up
    to a pipe, `;`, `&&`, a redirection, a comment or the end of the inline code."""
    return re.compile(
        rf"(?:^|(?<=[\s|;&(/`]))(?P<kubectl>kubectl )?pod-tailor(?: --check-config)? (?P<verb>{_names()})"
        r"(?![\w-])(?P<rest>(?:[^|;&>#`\n]|#(?!\s)|&(?!&))*)"
    )


# A paragraph about another program (a bench, kubectl, Prometheus) names that program's flags.
OTHER = re.compile(r"`(?:bench/|\.venv/bin/python |python3? |kubectl |promtool |prometheus |helm )|\(`bench/")
FLAG = re.compile(r"(?<![\w/.=-])(--?[A-Za-z][\w-]*)(?![\w.])")


def flags_of(match: re.Match[str]) -> tuple[str, list[str]]:
    """(the verb, the flags given to it) of a `command()` match."""
    verb = "cluster-preview" if match["kubectl"] else match["verb"]
    return verb, FLAG.findall(match["rest"])


def known(verb: str, flag: str) -> bool:
    return flag in verbs()[verb] or flag in verbs()[""]


def code_lines(text: str, *, shells_only: bool = False) -> Iterator[str]:
    """Every line of the code blocks, continuation lines joined, a console prompt dropped; with
    `shells_only`, only the commands of shell and console blocks (not printed output)."""
    for kind, block in re.findall(r"```([\w-]*)\n(.*?)```", text, flags=re.S):
        if shells_only and kind not in ("sh", "bash", "shell", "console"):
            continue
        for line in block.replace("\\\n", " ").splitlines():
            if kind == "console" and shells_only and not line.startswith("$ "):
                continue
            yield line.removeprefix("$ ")


def inline(text: str) -> list[str]:
    """The inline code spans of prose, one wrapped over two lines joined."""
    return [" ".join(span.split()) for span in re.findall(r"(?<!`)`([^`\n]+(?:\n[^`\n]+)?)`(?!`)", text)]


def sections(text: str) -> Iterator[tuple[list[str], str]]:
    """(the headings above it, outermost first and its own last; its text, code blocks included) of
    each section of a page."""
    headings: list[tuple[int, str]] = []
    body: list[str] = []
    fenced = False
    for line in text.splitlines():
        heading = None if fenced else re.match(r"(#+) (.*)", line)
        fenced ^= line.startswith("```")
        if heading is None:
            body.append(line)
            continue
        yield [title for _, title in headings], "\n".join(body)
        level = len(heading[1])
        headings = [*(kept for kept in headings if kept[0] < level), (level, heading[2])]
        body = []
    yield [title for _, title in headings], "\n".join(body)


def named_verbs(text: str) -> set[str]:
    """The verbs `text` names as `pod-tailor VERB` (in prose, or running in its code blocks), or as a
    verb alone in inline code (`profiles build`)."""
    alone = re.findall(rf"`({_names()})`", text)
    return {flags_of(match)[0] for match in command().finditer(text)} | set(alone)


def prose_flags(text: str) -> Iterator[tuple[set[str], str, str]]:
    """(the verbs around it, an inline code span of prose, where) for each span that gives flags: the
    verbs its paragraph, list or table names, its section names and the nearest heading above names
    (one of them must take it); none for a paragraph about another program that names no verb."""
    for headings, body in sections(text):
        where = headings[-1] if headings else ""
        section = named_verbs(body) | named_verbs(where)
        above = next((found for title in reversed(headings) if (found := named_verbs(title))), set())
        for block in re.split(r"\n\s*\n", re.sub(r"```.*?```", "", body, flags=re.S)):
            own = named_verbs(block)
            if not own and (OTHER.search(block) or OTHER.search(where)):  # about another program
                continue
            around = own | section | above
            for span in inline(block):
                alone = re.match(rf"({_names()}) -", span)  # `recommend --metrics-port 8081`
                if alone:
                    yield {alone[1]}, span, where
                elif span.startswith("-") and around:
                    yield around, span, where


def unknown_flags(text: str) -> list[str]:
    """`VERB FLAG (where)` for each flag of `text` its verb does not take."""
    wrong = []
    commands = [*code_lines(text), *inline(re.sub(r"```.*?```", "", text, flags=re.S))]
    for line in commands:
        for match in command().finditer(line):
            verb, flags = flags_of(match)
            comment = line[match.end():].partition("# ")[2]  # `pod-tailor certs  # or --service NAME`
            flags += FLAG.findall(comment)
            wrong += [f"{verb} {flag} (in `{line.strip()}`)" for flag in flags if not known(verb, flag)]
    for around, span, where in prose_flags(text):
        for flag in FLAG.findall(span):
            if flag not in FOREIGN and not any(known(verb, flag) for verb in around):
                wrong.append(f"{'/'.join(sorted(around))} {flag} (in `{span}`, {where!r})")
    return wrong


def unknown_verbs(text: str) -> list[str]:
    """Commands that start `pod-tailor WORD` where WORD is no verb."""
    starts = [*code_lines(text, shells_only=True), *re.findall(r"`([^`\n]+)`", text)]
    found = []
    for line in starts:
        word = re.match(r"\s*(?:kubectl )?pod-tailor ([a-z][\w-]*)", line)
        if word and word[1] not in {verb.split()[0] for verb in verbs() if verb}:
            found.append(line.strip())
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_flag_the_page_gives_a_verb_is_one_that_verb_takes(page: Path) -> None:
    assert unknown_flags(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_command_the_page_shows_names_a_verb(page: Path) -> None:
    assert unknown_verbs(page.read_text(encoding="utf-8")) == []


def test_no_verb_keeps_a_hidden_option() -> None:
    """A hidden option is how a renamed one would linger: the parser must show all it takes."""

    def hidden(parser: argparse.ArgumentParser) -> Iterator[str]:
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                yield from action.option_strings
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    yield from hidden(child)

    assert list(hidden(build_parser())) == []


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("```sh\npod-tailor report -f x --cluster\n```\n", ["report --cluster"]),
        (
            "```console\n$ pod-tailor profiles build \\\n  --prometheus http://p\n```\n",
            ["profiles build --prometheus"],
        ),
        (
            "Run `kubectl pod-tailor preview -f x --context c --store-namespace n`.\n",
            ["cluster-preview --store-namespace"],
        ),
        ("`pod-tailor recommend` takes `--kubernetes` and `--interval`.\n", ["recommend --kubernetes"]),
        ("## `pod-tailor preview`\n\nGive `--profiles p.json`.\n", ["preview --profiles"]),
        ("`pod-tailor preview` and `pod-tailor report` take `--cluster`.\n", ["preview/report --cluster"]),
        ("The metrics: `recommend --metrics-prt 8081`.\n", ["recommend --metrics-prt"]),
        ("`pod-tailor report --exit-code -o json`, `--window 14d`; `kubectl apply --dry-run=server`.\n", []),
        ("Prometheus refuses `--query.max-samples`; no verb named, so `--anything` is not checked.\n", []),
    ],
)
def test_the_check_finds_a_wrong_flag_wherever_it_is_written(text: str, wrong: list[str]) -> None:
    assert [found.split(" (in ")[0] for found in unknown_flags(text)] == wrong


def test_the_check_finds_a_verb_that_does_not_exist() -> None:
    shown = "```sh\npod-tailor recomend --interval 60\n```\n"
    assert unknown_verbs(shown) == ["pod-tailor recomend --interval 60"]
    assert unknown_verbs("`pod-tailor profiles build` and `pod-tailor --check-config serve`") == []
