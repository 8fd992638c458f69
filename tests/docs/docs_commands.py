#!/usr/bin/env python3
"""The README and the guides in docs/ show commands that work and links that resolve.

Usage: docs_commands.py STIEFEL ROOT

For README.md and every docs/*.md:
  - every `stiefel` command line in a code block (indented or fenced; `build/default/stiefel`,
    `stiefel`, after an optional `nice`), but a synopsis (a line with `[--` or `|`), is run as
    `STIEFEL ARGS... --help`: it must exit 0 (the values parse and pass their checks), and each
    `--option` it names must be one of its command's options (`STIEFEL COMMAND --help` lists them;
    `--help` alone does not refuse an unknown option);
  - every guide in docs/ (but findings.md, a report of results, and the tutorial, which is one
    example throughout) starts with a runnable example: its first section is "## Example" and
    holds at least one command line;
  - every relative Markdown link [text](path) names a file or folder that exists.
Exit 1 with one line per failure.
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

COMMAND = re.compile(r"^(?:\$ )?(?:nice (?:-n \d+ )?)?(?:\S*/)?stiefel (\S.*)$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NOT_GUIDES = {"findings.md"}


def code_lines(text):
    """The lines of the text's code blocks (4-space indented, or fenced), continuations joined."""
    out, fenced = [], False
    pending = ""
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            s = line.strip()
            if s.endswith("\\"):
                pending += s[:-1] + " "
                continue
            out.append(pending + s)
            pending = ""
    return out


def options_of(stiefel, command, cache={}):
    if command not in cache:
        r = subprocess.run([stiefel, command, "--help"], capture_output=True, text=True, timeout=60)
        cache[command] = set(re.findall(r"(--[\w-]+)", r.stdout + r.stderr)) if r.returncode == 0 else None
    return cache[command]


def check_commands(stiefel, path, text, failures):
    found = 0
    for line in code_lines(text):
        m = COMMAND.match(line)
        if not m:
            continue
        args_text = m.group(1)
        if "[--" in args_text or "|" in args_text:
            continue  # a synopsis, not a command
        try:
            args = shlex.split(args_text, comments=True)
        except ValueError as e:
            failures.append(f"{path}: `stiefel {args_text}` is not a shell command line ({e})")
            continue
        found += 1
        r = subprocess.run([stiefel] + args + ["--help"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            err = (r.stderr.strip() or r.stdout.strip()).splitlines()
            failures.append(f"{path}: `stiefel {args_text}` does not parse: {err[-1] if err else r.returncode}")
            continue
        known = options_of(stiefel, args[0])
        for a in args[1:]:
            if a.startswith("--"):
                name = a.split("=", 1)[0]
                if known is not None and name not in known:
                    failures.append(f"{path}: `stiefel {args[0]}` has no option {name} (in `stiefel {args_text}`)")
    return found


def check_links(root, path, text, failures):
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#") or not re.fullmatch(r"[\w./#-]+", target):
            continue  # a URL, an anchor, or not a path (a formula in brackets)
        target = target.split("#", 1)[0]
        if not (path.parent / target).exists():
            failures.append(f"{path.relative_to(root)}: the link to {target} names nothing")


def starts_with_example(path, text, failures):
    sections = re.findall(r"(?m)^## (.+)$", text)
    if not sections or sections[0].strip() != "Example":
        failures.append(f"{path}: its first section is not '## Example' (a guide starts with a runnable example)")
        return
    example = text.split("## Example", 1)[1].split("\n## ", 1)[0]
    if not any(line and not line.startswith("#") for line in code_lines(example)):
        failures.append(f"{path}: its example section shows no command line")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    stiefel, root = sys.argv[1], Path(sys.argv[2])
    failures = []
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    commands = 0
    for path in files:
        text = path.read_text()
        rel = path.relative_to(root)
        commands += check_commands(stiefel, rel, text, failures)
        check_links(root, path, text, failures)
        if path.parent.name == "docs" and path.name not in NOT_GUIDES and path.name != "certify-your-optimizer.md":
            starts_with_example(rel, text, failures)
    for f in failures:
        print("FAIL:", f)
    print(f"{len(files)} documents, {commands} command lines checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
