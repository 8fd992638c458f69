#!/usr/bin/env python3
"""The experiment part of docs/findings.md quotes the reports it names.

Usage: findings_numbers.py ROOT

The part of docs/findings.md under "# What the experiments find" is checked, section by section
("## ..."):
  - its opening paragraph lists every experiment report in reports/ in one of two lists, "At the
    paper's budget: `A`, `B`, ..." and "Reduced: `C`, ...", and each report's own "Profile:" line
    agrees (a paper-budget report states "reductions: none");
  - every section names the report(s) it quotes (`reports/NAME.md`);
  - every decimal number a section writes (45.02, −0.14, 3.3e-8, ...) is, to the precision the
    prose writes it (0.40 quotes 0.3987), a number of the reports it names, of the ledger rows
    whose evidence is one of those reports ("table6 [paper]" for table6-paper.md), or of the
    paper's (any ledger row's claim and paper columns); a percentage may quote a fraction (86.8%
    quotes 0.8676);
  - no section cites a ledger row by its number, which changes as claims are added.
A number that no named report holds is a stale quote, or a figure that belongs in a report.
"""
import re
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

NUMBER = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
DECIMAL = re.compile(r"(?<![\w.§])([+-]?\d+\.\d+(?:e[+-]?\d+)?)(\s?%)?")
CITED = re.compile(r"([\w-]+) \[([\w.-]+)\]")  # the ledger's "table6 [paper-adamw-1e-2]"
ROW = re.compile(r"\brows? \d+")
REPORT = re.compile(r"`(reports/[\w.-]+\.md)`")
PART = "# What the experiments find"


def plain(text):
    return text.replace("\u2212", "-")


def numbers(text):
    found = []
    for token in NUMBER.findall(plain(text)):
        try:
            found.append(abs(Decimal(token)))
        except InvalidOperation:
            pass
    return found


def quotes(token, pool, percent=False):
    """True when some number of the pool, rounded to the token's last digit, is the token; a
    percentage (86.8%) may quote a fraction (0.8676) as well as a percentage."""
    value = abs(Decimal(token))
    half = Decimal(1).scaleb(value.as_tuple().exponent) / 2
    if any(abs(x - value) <= half for x in pool):
        return True
    return percent and any(abs(100 * x - value) <= half for x in pool)


def main(root):
    root = Path(root)
    text = (root / "docs/findings.md").read_text()
    failures = []
    if PART not in text:
        sys.exit(f"FAIL: docs/findings.md has no '{PART}' part")
    part = text.split(PART, 1)[1]
    part = re.split(r"(?m)^# ", part, maxsplit=1)[0]
    opening, *sections = re.split(r"(?m)^## ", part)

    # The opening's two lists against the reports' own profile lines.
    lists = {}
    for label, key in (("At the paper's budget:", "paper"), ("Reduced:", "reduced")):
        m = re.search(re.escape(label) + r"((?:\s*`[\w.-]+`,?)+)", opening)
        if not m:
            failures.append(f"the opening paragraph has no list '{label} `NAME`, ...'")
            continue
        lists[key] = re.findall(r"`([\w.-]+)`", m.group(1))
    experiment_reports = sorted(p.stem for p in (root / "reports").glob("*.md")
                                if "- Profile: " in p.read_text())
    listed = lists.get("paper", []) + lists.get("reduced", [])
    for name in experiment_reports:
        if name not in listed:
            failures.append(f"reports/{name}.md is in neither list of the opening paragraph")
    for key, names in lists.items():
        for name in names:
            path = root / "reports" / f"{name}.md"
            if not path.exists():
                failures.append(f"the opening lists `{name}`, but reports/{name}.md does not exist")
                continue
            profile = re.search(r"(?m)^- Profile: .*$", path.read_text())
            full = profile is not None and "reductions: none" in profile.group(0)
            if full != (key == "paper"):
                failures.append(f"the opening lists `{name}` as {'at the paper' if key == 'paper' else 'reduced'}"
                                f"'s budget; its report says: {profile.group(0) if profile else 'no profile line'}")

    # The ledger: every row's claim and paper columns (the paper's values), and the whole of each
    # row whose evidence is one of the named reports' tables ("table6 [paper]" for table6-paper).
    ledger = [[c.strip() for c in row.split(" | ")]
              for row in (root / "reports/CLAIMS.md").read_text().splitlines() if row.startswith("| ")]
    ledger = [cells for cells in ledger if len(cells) >= 5 and cells[0].lstrip("| ").isdigit()]
    paper = [x for cells in ledger for x in numbers(cells[1] + " " + cells[3])]

    checked = 0
    for section in sections:
        title = section.splitlines()[0]
        named = sorted(set(REPORT.findall(section)))
        if not named:
            failures.append(f"section '{title[:60]}' names no report (`reports/NAME.md`)")
            continue
        pool = list(paper)
        for name in named:
            path = root / name
            if not path.exists():
                failures.append(f"section '{title[:60]}' names {name}, which does not exist")
                continue
            pool += numbers(path.read_text())
            stem = Path(name).stem
            pool += [x for cells in ledger
                     if any(f"{table}-{profile}" == stem for table, profile in CITED.findall(" ".join(cells)))
                     for x in numbers(" ".join(cells))]
        for row in ROW.findall(section):
            failures.append(f"section '{title[:60]}' cites ledger {row}: the ledger renumbers its rows as "
                            "claims are added; name the claim instead")
        for token, percent in DECIMAL.findall(plain(section)):
            checked += 1
            if not quotes(token, pool, bool(percent)):
                failures.append(f"section '{title[:60]}' writes {token}, which none of {', '.join(named)} "
                                "or reports/CLAIMS.md holds")
    if failures:
        sys.exit("FAIL: docs/findings.md\n  " + "\n  ".join(failures))
    print(f"findings.md: {len(sections)} experiment sections quote their reports ({checked} numbers), "
          f"{len(experiment_reports)} reports listed by budget")


if __name__ == "__main__":
    main(sys.argv[1])
