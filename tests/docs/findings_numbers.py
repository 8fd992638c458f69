#!/usr/bin/env python3
"""The experiment part of docs/findings.md quotes the reports it names.

Usage: findings_numbers.py ROOT

The part of docs/findings.md under "# What the experiments find" is checked, section by section
("## ...", fenced code blocks and code spans left out):
  - its opening paragraph lists every experiment report of reports/ (a report with a "- Profile: "
    line) in one of two lists, "At the paper's budget: `A`, `B`, ..." and "Reduced: `C`, ...", and
    each listed report's own profile line agrees (a paper-budget report states "reductions: none");
  - every section names the experiment report(s) it quotes (`reports/NAME.md`), and any other
    committed output it quotes (`reports/bench/NAME.txt`);
  - what a section writes is in those files or in the ledger rows (reports/CLAIMS.md) whose
    evidence is one of them ("table6 [paper]" for table6-paper.md), to the precision the prose
    writes it (0.40 quotes 0.3987):
      * a mean and its spread, "45.02 ± 0.56", as one pair;
      * an interval, "[3.31, 4.09]", as one pair;
      * a count, "12/12", as written;
      * every other decimal number, signed where the prose gives a sign (−0.14 does not quote
        0.14; "drops by 0.87" quotes −0.87), a percentage possibly quoting a fraction (86.8%
        quotes 0.8676);
  - no section cites a ledger row by its number, which changes as claims are added;
  - a bound on the constrained frames' isometry error ("every constrained arm stays below 4e-08",
    "≤ 4e-8 at every size") holds for every constrained arm of the reports it names, at the
    precision of their JSON (iso_max_run of each arm whose largest error is below 1e-3): a bound
    that a rounded table cell meets but a run exceeds is a false statement.
A number that no named report holds is a stale quote, or a figure that belongs in a report.
"""
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

SIGNED = r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
NUMBER = re.compile(r"(?<![\w.])" + SIGNED)
DECIMAL = re.compile(r"(?<![\w.§/])([+-]?\d+\.\d+(?:[eE][+-]?\d+)?)(?![\d/])(\s?%)?")
PAIR = re.compile(r"(?<![\w.])(" + SIGNED + r") ± (" + SIGNED + r")")
INTERVAL = re.compile(r"\[(" + SIGNED + r"), (" + SIGNED + r")\]")
COUNT = re.compile(r"(?<![\w./(-])(\d+/\d+)(?![\w/)])")
ROW = re.compile(r"(?i)\brows? \d+(?!\d*\s+of\b)")
FILE = re.compile(r"`(reports/[\w./-]+)`")
CITED = re.compile(r"([\w-]+) \[([\w.-]+)\]")  # the ledger's "table6 [paper-adamw-1e-2]"
PART = "# What the experiments find"
FENCE = re.compile(r"(?ms)^```.*?^```[^\n]*$")


def plain(text):
    return text.replace("\u2212", "-")


def prose(text):
    """The text without fenced code blocks, code spans and software versions ("LibTorch 2.11")."""
    text = FENCE.sub("", text)
    text = re.sub(r"\b(LibTorch|PyTorch|CUDA|OpenBLAS|Debian|version) \d+(?:\.\d+)+", r"\1", text)
    return re.sub(r"`[^`\n]*`", "", text)


def quotes(token, values, signed):
    """True when one of the values, rounded to the token's last digit, is the token."""
    want = Decimal(token)
    half = Decimal(1).scaleb(want.as_tuple().exponent) / 2
    if not signed:
        return any(abs(abs(x) - abs(want)) <= half for x in values)
    return any(abs(x - want) <= half for x in values)


class Pool:
    """The numbers of the reports a section names and of their ledger rows."""

    def __init__(self, texts):
        text = plain("\n".join(texts))
        self.text = text
        self.numbers = [Decimal(t) for t in NUMBER.findall(text)]
        self.pairs = [(Decimal(a), Decimal(b)) for a, b in PAIR.findall(text)]
        self.intervals = [(Decimal(a), Decimal(b)) for a, b in INTERVAL.findall(text)]
        self.counts = set(COUNT.findall(text))

    def holds_pair(self, a, b, pairs):
        return any(quotes(a, [x], True) and quotes(b, [y], True) for x, y in pairs)


def experiment_part(text, failures):
    if PART not in text:
        failures.append(f"docs/findings.md has no '{PART}' part")
        return "", []
    part = text.split(PART, 1)[1]
    fenced = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), part)
    end = re.search(r"(?m)^# ", fenced)
    part = part[: end.start()] if end else part
    pieces = re.split(r"(?m)^## ", part)
    return pieces[0], pieces[1:]


def check_opening(root, opening, failures):
    lists = {}
    for label, key in (("At the paper's budget:", "paper"), ("Reduced:", "reduced")):
        m = re.search(re.escape(label) + r"((?:\s*`[\w.-]+`,?)+)", opening)
        if not m:
            failures.append(f"the opening paragraph has no list '{label} `NAME`, ...'")
            continue
        lists[key] = re.findall(r"`([\w.-]+)`", m.group(1))
    reports = sorted(p.stem for p in (root / "reports").glob("*.md") if "- Profile: " in p.read_text())
    listed = lists.get("paper", []) + lists.get("reduced", [])
    for name in reports:
        if name not in listed:
            failures.append(f"reports/{name}.md is in neither list of the opening paragraph")
    for key, names in lists.items():
        for name in names:
            path = root / "reports" / f"{name}.md"
            profile = re.search(r"(?m)^- Profile: .*$", path.read_text()) if path.exists() else None
            if profile is None:
                failures.append(f"the opening lists `{name}`, but reports/{name}.md is not an experiment report")
                continue
            full = "reductions: none" in profile.group(0)
            if full != (key == "paper"):
                where = "at the paper's budget" if key == "paper" else "reduced"
                failures.append(f"the opening lists `{name}` as {where}; its report says: {profile.group(0)}")
    return len(reports)


def check_section(title, section, pool, sources, failures):
    """The section's figures against the pool; returns how many were checked."""
    body = plain(prose(section))
    checked = 0
    for row in ROW.findall(body):
        failures.append(f"section '{title}' cites ledger {row}: the ledger renumbers its rows as claims "
                        "are added; name the claim instead")
    for a, b in PAIR.findall(body):
        checked += 1
        if not pool.holds_pair(a, b, pool.pairs):
            failures.append(f"section '{title}' writes {a} ± {b}, which {sources} does not hold")
    for a, b in INTERVAL.findall(body):
        checked += 1
        if not pool.holds_pair(a, b, pool.intervals):
            failures.append(f"section '{title}' writes the interval [{a}, {b}], which {sources} does not hold")
    for c in COUNT.findall(body):
        checked += 1
        if c not in pool.counts:
            failures.append(f"section '{title}' writes {c}, which {sources} does not hold")
    rest = INTERVAL.sub(" ", PAIR.sub(" ", body))
    for token, percent in DECIMAL.findall(rest):
        checked += 1
        values = pool.numbers + ([100 * x for x in pool.numbers] if percent else [])
        if not quotes(token, values, token[0] in "+-"):
            failures.append(f"section '{title}' writes {token}, which {sources} does not hold")
    return checked


BOUND = re.compile(r"(below|under|at or below|at most|≤)\s+(" + SIGNED + r")")


def check_isometry_bounds(title, section, reports, failures):
    """Each isometry bound of the section against the constrained arms of its reports' JSON."""
    worst, where = 0.0, None
    for path in reports:
        for group in json.loads(path.read_text()).get("groups", []):
            for arm in group.get("arms", []):
                v = arm.get("iso_max_run")
                if isinstance(v, (int, float)) and v < 1e-3 and v > worst:
                    worst, where = v, f"{path.stem} {group.get('id', '')} {arm.get('id', '')}"
    checked = 0
    for sentence in re.split(r"(?<=\.)\s+|\n(?=- )", plain(prose(section))):
        if "isometry" not in sentence:
            continue
        for relation, bound in BOUND.findall(sentence):
            if Decimal(bound) > Decimal("1e-3"):
                continue
            checked += 1
            strict = relation in ("below", "under")
            if worst > float(bound) or (strict and worst == float(bound)):
                failures.append(f"section '{title}' bounds the isometry error {relation} {bound}, but {where} "
                                f"reaches {worst:.4g}")
    return checked


def ledger_rows(root):
    rows = [[c.strip() for c in row.split(" | ")]
            for row in (root / "reports/CLAIMS.md").read_text().splitlines() if row.startswith("| ")]
    return [cells for cells in rows if len(cells) >= 5 and cells[0].lstrip("| ").isdigit()]


def report_rows(ledger, name):
    """The ledger rows whose evidence is the experiment report NAME ("table6 [paper]" for table6-paper)."""
    stem = Path(name).stem
    return [" | ".join(cells) for cells in ledger
            if any(f"{t}-{p}" == stem for t, p in CITED.findall(" | ".join(cells)))]


def check_certificate_part(root, text, ledger, failures):
    """The sections before the experiment part: each figure is one of the certificate claims the
    section names (`claim-id`, or `prefix-*` for a family), of the files under reports/ it names
    (with their ledger rows), of the ledger rows that cite those claims, or one of the paper's
    (any ledger row's claim and paper columns). A section titled "... (history)" records what
    earlier runs found, in no committed file, and is not checked."""
    claims = {}
    for path in [root / "reports/certificate.json", root / "reports/certificate-paper-size.json",
                 *sorted((root / "reports").glob("*/certificate*.json"))]:
        for claim in json.loads(path.read_text())["claims"]:
            claims.setdefault(claim["id"], []).append(json.dumps(claim))
    paper = [cells[1] + " " + cells[3] for cells in ledger]
    part = text.split(PART, 1)[0]
    sections = re.split(r"(?m)^## ", part)[1:]
    checked = 0
    for section in sections:
        title = section.splitlines()[0][:60]
        if "(history)" in section.splitlines()[0]:
            continue
        names = set(re.findall(r"`([^`\n]+)`", section))
        ids = {i for n in names for i in claims
               if i == n or (n.endswith("-*") and i.startswith(n[:-1]))}
        files = sorted(n for n in names if n.startswith("reports/") and (root / n).is_file())
        texts = [c for i in ids for c in claims[i]]
        texts += [" | ".join(cells) for cells in ledger if any(i in cells[4] for i in ids)]
        for name in files:
            texts.append((root / name).read_text())
            texts += report_rows(ledger, name)
        sources = ", ".join(sorted(ids) + files) or "no named claim or file"
        checked += check_section(title, section, Pool(texts), f"{sources} (or the paper)", failures)
    return len(sections), checked


def main(root):
    root = Path(root)
    failures = []
    text = (root / "docs/findings.md").read_text()
    ledger = ledger_rows(root)
    certificate_sections, certificate_checked = check_certificate_part(root, text, ledger, failures)
    opening, sections = experiment_part(text, failures)
    count = check_opening(root, opening, failures) if opening else 0
    checked = 0
    for section in sections:
        title = section.splitlines()[0][:60] if section.strip() else "(empty)"
        files = sorted(n for n in set(FILE.findall(section)) if (root / n).is_file())
        named = [n for n in files if n.endswith(".md") and "- Profile: " in (root / n).read_text()]
        if not named:
            failures.append(f"section '{title}' names no experiment report (`reports/NAME.md`)")
            continue
        texts = []
        for name in files:  # its experiment reports, and any other output it quotes (reports/bench/)
            texts.append((root / name).read_text())
            texts += report_rows(ledger, name)
        checked += check_section(title, section, Pool(texts), ", ".join(files), failures)
        jsons = [root / (n[: -len(".md")] + ".json") for n in named if (root / (n[: -len(".md")] + ".json")).is_file()]
        checked += check_isometry_bounds(title, section, jsons, failures)
    if failures:
        sys.exit("FAIL: docs/findings.md\n  " + "\n  ".join(failures))
    print(f"findings.md: {certificate_sections} certificate sections quote the certificate "
          f"({certificate_checked} figures); {len(sections)} experiment sections quote their reports "
          f"({checked} figures), {count} reports listed by budget")


if __name__ == "__main__":
    main(sys.argv[1])
