#!/usr/bin/env python3
"""A committed certificate is what `stiefel certify` gives on the tree: the same claims, each with
the same expectation, verdict, establishment, controls and shrunk counterexample, the same figures
(numbers to 6 significant digits), and for claims run by core/ (Eigen, no BLAS) the same worst
ratio to 2 significant digits. Timings, dates, the machine and the command line are not compared:
LibTorch's claims (the trainer) may move in their last digits with the BLAS kernel, so only their
verdicts and controls are held.
Usage: same_certificate.py COMMITTED FRESH"""
import json
import sys


def rounded(x, digits):
    if isinstance(x, float):
        return float(f"{x:.{digits}g}")
    if isinstance(x, dict):
        return {k: rounded(v, digits) for k, v in x.items() if k not in ("seconds", "wall_seconds")}
    if isinstance(x, list):
        return [rounded(v, digits) for v in x]
    return x


def summary(k):
    ce = k.get("counterexample") or {}
    out = {"expected": k["expected"], "observed": k["observed"], "meets_expectation": k["meets_expectation"],
           "established": k.get("established"), "cases": k["cases"],
           "controls": [(c["id"], c["status"]) for c in k["controls"]],
           "counterexample": ce.get("case"), "figures": rounded(k.get("figures"), 6)}
    if k.get("implementation", "").startswith("core/"):
        w = k.get("worst") or {}
        out["worst_ratio"] = rounded(w.get("ratio_float64"), 2)
    return out


def main(committed_path, fresh_path):
    committed, fresh = (json.load(open(p)) for p in (committed_path, fresh_path))
    a = {k["id"]: summary(k) for k in committed["claims"]}
    b = {k["id"]: summary(k) for k in fresh["claims"]}
    problems = [f"{i}: only in the committed certificate" for i in sorted(a.keys() - b.keys())]
    problems += [f"{i}: not in the committed certificate" for i in sorted(b.keys() - a.keys())]
    for i in sorted(a.keys() & b.keys()):
        for field in a[i]:
            if a[i][field] != b[i].get(field):
                problems.append(f"{i}: {field} committed {json.dumps(a[i][field])[:200]}, "
                                f"now {json.dumps(b[i].get(field))[:200]}")
    if problems:
        sys.exit(f"FAIL: {committed_path} is not what `stiefel certify` gives on this tree "
                 f"({len(problems)} differences; regenerate it with the command in its run.command_line):\n  " +
                 "\n  ".join(problems[:30]))
    print(f"{committed_path}: {len(a)} claims as the tree certifies them")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
