#!/usr/bin/env python3
"""ci/paper-grok.sh, the queue of the grokking runs still to make at the paper's budget, covers what
the ledger waits for, and asks only for what the definitions have.

Usage: paper_grok_plan.py ROOT

From `ci/paper-grok.sh --plan`:
  - every step names an experiment of experiments/, the paper profile, arms that experiment
    defines, and its own results folder results/NAME-paper;
  - a --reuse-from step fills arms each of which has the train settings of an arm the same lane
    trains before it (a reuse with no identical completed cell would train the run instead);
  - no arm is trained in both lanes (two processes would queue the same runs);
  - every arm that an empirical claim of experiments/claims.json reads (its arm, a contrast's arm
    and baseline, a ratio's denominator) in a grokking experiment either has a completed record for
    every seed of the paper profile in results/NAME-paper, or is in the plan: a claim left out
    would read "not run" for ever.
"""
import glob
import json
import os
import subprocess
import sys


def fail(msg):
    sys.exit("FAIL: " + msg)


def main(root):
    out = subprocess.run(["bash", os.path.join(root, "ci/paper-grok.sh"), "--plan"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    lanes, lane = {}, None
    for line in out.splitlines():
        if line.startswith("lane "):
            lane = line.rstrip(":")
            lanes[lane] = []
        elif line.strip():
            lanes[lane].append(line.split())
    if sorted(lanes) != ["lane 1", "lane 2"]:
        fail(f"the plan has lanes {sorted(lanes)}, not two")
    planned = {}  # (experiment, arm) -> lane
    definitions = {}
    for lane, steps in lanes.items():
        trained = {}  # (experiment, arm) -> train settings, in this lane so far
        for words in steps:
            opts = {words[i]: words[i + 1] for i in range(2, len(words) - 1) if words[i].startswith("--")}
            if words[:2] != ["stiefel", "experiment"] or opts.get("--profile") != "paper":
                fail(f"{lane}: not a paper-profile experiment step: {' '.join(words)}")
            name = words[2]
            path = os.path.join(root, "experiments", name + ".json")
            if not os.path.isfile(path):
                fail(f"{lane}: experiment {name} has no definition")
            d = definitions.setdefault(name, json.load(open(path)))
            if "paper" not in d.get("profiles", {}):
                fail(f"{lane}: experiment {name} has no paper profile")
            if opts.get("--out") != f"results/{name}-paper":
                fail(f"{lane}: {name} writes to {opts.get('--out')}, not results/{name}-paper")
            arms = {a["id"]: a["train"] for a in d["arms"]}
            for arm in opts["--arms"].split(","):
                if arm not in arms:
                    fail(f"{lane}: experiment {name} has no arm {arm}")
                if "--reuse-from" in opts:
                    if opts["--reuse-from"] != opts["--out"]:
                        fail(f"{lane}: {name} reuses from {opts['--reuse-from']}, not its own folder")
                    if not any(e == name and t == arms[arm] for (e, _), t in trained.items()):
                        fail(f"{lane}: {name} {arm} is reused, but no earlier step of the lane trains its settings")
                if (name, arm) in planned and planned[(name, arm)] != lane:
                    fail(f"{name} {arm} is in both lanes")
                planned[(name, arm)] = lane
                trained[(name, arm)] = arms[arm]
    claims = json.load(open(os.path.join(root, "experiments/claims.json")))["claims"]
    waiting = []
    for c in claims:
        if c.get("kind") != "empirical":
            continue
        name = c["experiment"]
        d = definitions.get(name) or json.load(open(os.path.join(root, "experiments", name + ".json")))
        if d.get("analysis") != "grok":
            continue
        refs = [c["ref"]] + ([c["rule"]["denominator"]] if "denominator" in c["rule"] else [])
        arms = []
        for r in refs:
            if "contrast" in r:
                k = next(x for x in d.get("contrasts", []) if x["id"] == r["contrast"])
                arms += [k["arm"], k["baseline"]]
            else:
                arms.append(r["arm"])
        seeds = d["profiles"]["paper"].get("seeds", d["seeds"])
        for arm in arms:
            group = c["ref"].get("group", "main")
            records = glob.glob(os.path.join(root, "results", name + "-paper", "runs", group, arm, "seed-*", "run.json"))
            done = [r for r in records if json.load(open(r)).get("status") == "completed"]
            if len(done) < (seeds if isinstance(seeds, int) else len(seeds)) and (name, arm) not in planned:
                waiting.append(f"{c['id']} ({name} {arm}: {len(done)} completed)")
    if waiting:
        fail("claims whose runs are neither complete nor in the plan: " + ", ".join(waiting))
    print(f"paper-grok.sh plans {sum(len(s) for s in lanes.values())} steps in 2 lanes, covering every grokking "
          f"claim's arm without completed runs")


if __name__ == "__main__":
    main(sys.argv[1])
