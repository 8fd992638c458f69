#!/usr/bin/env python3
"""ci/paper-grok.sh, the queue of the grokking runs still to make at the paper's budget, covers what
the ledger waits for, asks only for what the definitions have, and trains no cell twice.

Usage: paper_grok_plan.py ROOT

From `ci/paper-grok.sh --plan` (each command line quoted as the lane passes it):
  - every step names an experiment of experiments/, the paper profile, arms that experiment
    defines, and its own results folder results/NAME-paper; a step on a grid that exists unsets
    OPENBLAS_CORETYPE (the grid runs under the kernels it was pinned with, and refuses others);
  - a --shard step picks, from the grid's runs in their pinned order (or, for a grid not pinned yet,
    seed by seed, each seed's arms in the definition's order), at least one run of its arms;
  - a --reuse-from step targets a pinned grid, and each of its cells of the step's arms is complete
    already or has the settings and seed of a cell that an earlier step of the same lane trains in
    the folder it copies from (a reuse with nothing to copy would train the run itself);
  - a cell that a training step would train has the settings and seed of no cell another step trains
    (the duplicate belongs in a --reuse-from step), and no arm of an experiment is trained in both
    lanes;
  - a lane runs with a stand-in for stiefel in a scratch repository: its first reuse step is skipped
    (and the lane goes on, exiting 1) while the cells it copies are not complete, or where its own
    cell has been started; it runs once they are complete;
  - every arm that an empirical claim of experiments/claims.json reads (its arm, a contrast's arm
    and baseline, a ratio's denominator) in a grokking experiment either has a completed record for
    every seed of the paper profile in results/NAME-paper, or is in the plan: a claim left out
    would read "not run" for ever.
"""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    sys.exit("FAIL: " + msg)


def completed(path):
    try:
        return json.load(open(path)).get("status") == "completed"
    except (OSError, ValueError):
        return False


class Plan:
    def __init__(self, root):
        self.root = root
        self.definitions = {}

    def definition(self, name):
        if name not in self.definitions:
            path = os.path.join(self.root, "experiments", name + ".json")
            if not os.path.isfile(path):
                fail(f"experiment {name} has no definition")
            self.definitions[name] = json.load(open(path))
        return self.definitions[name]

    def pinned(self, name):
        path = os.path.join(self.root, "results", name + "-paper", "experiment.json")
        return json.load(open(path))["grid"] if os.path.isfile(path) else None

    def computed(self, name):
        """[(run id, settings)] as a grid not pinned yet will be: seed by seed, each seed's arms in the
        definition's order, the settings the definition's, its paper profile's, then the arm's."""
        d = self.definition(name)
        seeds = d["profiles"]["paper"].get("seeds", d["seeds"])
        seeds = range(seeds) if isinstance(seeds, int) else seeds
        base = {"task": d["task"], **d.get("train", {}), **d["profiles"]["paper"].get("train", {})}
        return [(f"main/{a['id']}/seed-{s}", {**base, **a["train"], "seed": s}) for s in seeds for a in d["arms"]]

    def grid(self, name):
        """[(run id, settings)] in the grid's order: the pinned grid's, else as computed. A pinned
        grid is also computed, and the two must agree, so the computation is what a pin gives."""
        pinned = self.pinned(name)
        if pinned is None:
            return self.computed(name)
        grid = [(r["id"], r["train"]) for r in pinned]
        if sorted(grid, key=lambda x: x[0]) != sorted(self.computed(name), key=lambda x: x[0]):
            fail(f"results/{name}-paper: its pinned grid is not the grid its definition computes here")
        return grid


def arm_of(run_id):
    return run_id.split("/")[-2]


def check_lane_gate(root, lane_number, words):
    """The lane's first --reuse-from step (WORDS), run in a scratch repository with a stand-in
    stiefel that only logs its arguments, under three states of the cells it copies."""
    opts = {words[i]: words[i + 1] for i in range(2, len(words) - 1) if words[i].startswith("--")}
    out, src, arms = opts["--out"], opts["--reuse-from"], opts["--arms"].split(",")
    work = tempfile.mkdtemp(prefix="paper-grok-lane-")
    try:
        os.makedirs(os.path.join(work, "ci"))
        shutil.copy(os.path.join(root, "ci/paper-grok.sh"), os.path.join(work, "ci"))
        subprocess.run(["git", "init", "-q", work], check=True)
        fake = os.path.join(work, "bin")
        os.makedirs(fake)
        with open(os.path.join(fake, "stiefel"), "w") as f:
            f.write('#!/bin/sh\necho "$*" >> "$(dirname "$0")/calls"\n')
        os.chmod(os.path.join(fake, "stiefel"), 0o755)
        grids = {}
        for folder in {out, src}:
            os.makedirs(os.path.join(work, folder))
            shutil.copy(os.path.join(root, folder, "experiment.json"), os.path.join(work, folder))
            grids[folder] = json.load(open(os.path.join(root, folder, "experiment.json")))["grid"]
        targets = [r for r in grids[out] if arm_of(r["id"]) in arms]
        sources = [s for s in grids[src] if any(s["train"] == r["train"] for r in targets) and
                   (src != out or arm_of(s["id"]) not in arms)]
        if not sources:
            fail(f"lane {lane_number}: {' '.join(words)}: no cell of {src} has its cells' settings")

        def state(folder, run_id, status=None, log=False):
            cell = os.path.join(work, folder, "runs", run_id)
            shutil.rmtree(cell, ignore_errors=True)
            os.makedirs(cell)
            if status:
                json.dump({"status": status}, open(os.path.join(cell, "run.json"), "w"))
            if log:
                open(os.path.join(cell, "log.txt"), "w").close()

        def run_lane():
            calls = os.path.join(fake, "calls")
            if os.path.exists(calls):
                os.remove(calls)
            p = subprocess.run(["bash", os.path.join(work, "ci/paper-grok.sh"), "--lane", str(lane_number), fake,
                                "build/default"], cwd=work, capture_output=True, text=True)
            made = open(calls).read().splitlines() if os.path.exists(calls) else []
            ran = any(f"--arms {opts['--arms']} " in c + " " and "--reuse-from" in c for c in made)
            return p.returncode, ran, len(made), p.stderr

        for s_ in sources:
            state(src, s_["id"], "running")
        for r in targets:
            state(out, r["id"])
        rc, ran, calls, err = run_lane()
        if ran or rc != 1 or "skipped" not in err:
            fail(f"lane {lane_number}: the reuse step ran (or the lane did not exit 1) while the cells it copies "
                 f"were not complete: {err.strip()}")
        expected_calls = calls
        for s_ in sources:
            state(src, s_["id"], "completed")
        rc, ran, calls, err = run_lane()
        if not ran or calls != expected_calls + 1:
            fail(f"lane {lane_number}: the reuse step did not run once the cells it copies were complete: {err.strip()}")
        state(out, targets[0]["id"], log=True)
        rc, ran, calls, err = run_lane()
        if ran or rc != 1:
            fail(f"lane {lane_number}: the reuse step ran into a cell already started (it would resume it)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(root):
    out = subprocess.run(["bash", os.path.join(root, "ci/paper-grok.sh"), "--plan"], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    lanes, lane = {}, None
    for line in out.splitlines():
        if line.startswith("lane "):
            lane = line.rstrip(":")
            lanes[lane] = []
        elif line.strip():
            lanes[lane].append(shlex.split(line))  # as the shell would pass the words
    if sorted(lanes) != ["lane 1", "lane 2"]:
        fail(f"the plan has lanes {sorted(lanes)}, not two")
    plan = Plan(root)
    trained = []  # (lane, step index, experiment, run id, settings) of every cell a training step trains
    steps = []
    for lane, lines in lanes.items():
        for index, words in enumerate(lines):
            text = " ".join(words)
            at = words.index("stiefel")
            env, words = words[:at], words[at:]
            opts = {words[i]: words[i + 1] for i in range(2, len(words) - 1) if words[i].startswith("--")}
            if words[1] != "experiment" or opts.get("--profile") != "paper":
                fail(f"{lane}: not a paper-profile experiment step: {text}")
            name = words[2]
            d = plan.definition(name)
            if "paper" not in d.get("profiles", {}):
                fail(f"{lane}: experiment {name} has no paper profile")
            if opts.get("--out") != f"results/{name}-paper":
                fail(f"{lane}: {name} writes to {opts.get('--out')}, not results/{name}-paper")
            exists = plan.pinned(name) is not None
            if exists and env != ["env", "-u", "OPENBLAS_CORETYPE"]:
                fail(f"{lane}: {text}: a pinned grid's step must unset OPENBLAS_CORETYPE")
            arms = opts["--arms"].split(",")
            for arm in arms:
                if arm not in {a["id"] for a in d["arms"]}:
                    fail(f"{lane}: experiment {name} has no arm {arm}")
            cells = [(rid, t) for rid, t in plan.grid(name) if arm_of(rid) in arms]
            if "--shard" in opts:
                i, n = (int(x) for x in opts["--shard"].split("/"))
                cells = [(rid, t) for k, (rid, t) in enumerate(plan.grid(name)) if k % n == i - 1 and arm_of(rid) in arms]
                if not cells:
                    fail(f"{lane}: {text}: the shard holds no run of its arms")
            steps.append((lane, index, name, text, opts, cells))
            if "--reuse-from" not in opts:
                trained += [(lane, index, name, rid, t) for rid, t in cells]
    for lane, index, name, text, opts, cells in steps:
        if "--reuse-from" not in opts:
            continue
        if plan.pinned(name) is None:
            fail(f"{lane}: {text}: reuses into a grid that is not pinned yet")
        src = opts["--reuse-from"]
        if not src.startswith("results/") or not src.endswith("-paper"):
            fail(f"{lane}: {text}: reuses from {src}, not a paper-profile results folder")
        src_name = src[len("results/"):-len("-paper")]
        for rid, t in cells:
            if completed(os.path.join(root, "results", name + "-paper", "runs", rid, "run.json")):
                continue
            if not any(l == lane and k < index and e == src_name and s == t for l, k, e, _, s in trained):
                fail(f"{lane}: {text}: {rid} is reused, but no earlier step of the lane trains its settings in {src}")
    seen = {}
    for lane, index, name, rid, t in trained:
        key = json.dumps(t, sort_keys=True)
        if key in seen and seen[key][:2] != (name, rid):
            fail(f"{name} {rid} ({lane}) and {seen[key][0]} {seen[key][1]} ({seen[key][2]}) train the same settings: "
                 "one of them belongs in a --reuse-from step")
        if key in seen and seen[key][2] != lane:
            fail(f"{name} {arm_of(rid)} is trained in both lanes")
        seen[key] = (name, rid, lane)
    planned = {(name, arm_of(rid)) for _, _, name, _, _, cells in steps for rid, _ in cells}
    waiting = []
    for c in json.load(open(os.path.join(root, "experiments/claims.json")))["claims"]:
        if c.get("kind") != "empirical":
            continue
        name = c["experiment"]
        d = plan.definition(name)
        if d.get("analysis") != "grok":
            continue
        arms = []
        for r in [c["ref"]] + ([c["rule"]["denominator"]] if "denominator" in c["rule"] else []):
            if "contrast" in r:
                k = [x for x in d.get("contrasts", []) if x["id"] == r["contrast"]]
                if not k:
                    fail(f"claim {c['id']}: experiment {name} has no contrast {r['contrast']}")
                arms += [k[0]["arm"], k[0]["baseline"]]
            else:
                arms.append(r["arm"])
        seeds = d["profiles"]["paper"].get("seeds", d["seeds"])
        seeds = seeds if isinstance(seeds, int) else len(seeds)
        for arm in arms:
            group = c["ref"].get("group", "main")
            records = glob.glob(os.path.join(root, "results", name + "-paper", "runs", group, arm, "seed-*", "run.json"))
            done = [r for r in records if completed(r)]
            if len(done) < seeds and (name, arm) not in planned:
                waiting.append(f"{c['id']} ({name} {arm}: {len(done)} completed)")
    if waiting:
        fail("claims whose runs are neither complete nor in the plan: " + ", ".join(waiting))
    for lane, lines in lanes.items():
        first = next((w[w.index("stiefel"):] for w in lines if "--reuse-from" in w), None)
        if first:
            check_lane_gate(root, lane.split()[1], first)
    # --status: a line for every step, each cell with the state its record gives.
    status = subprocess.run(["bash", os.path.join(root, "ci/paper-grok.sh"), "--status"], cwd=root,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    step_lines = [l for l in status if l.startswith("  ")]
    if len(step_lines) != len(steps):
        fail(f"--status prints {len(step_lines)} step lines for {len(steps)} steps")
    for line, (lane, _, name, _, _, cells) in zip(step_lines, steps):
        if plan.pinned(name) is None:
            continue
        named = {w for w in line.replace(";", " ").split() if w.startswith("main/")}
        if named != {rid for rid, _ in cells}:
            fail(f"--status: {line.strip()!r} names {sorted(named)}, not the step's cells {sorted(r for r, _ in cells)}")
        for rid, _ in cells:
            record = os.path.join(root, "results", name + "-paper", "runs", rid, "run.json")
            try:
                status = json.load(open(record)).get("status")
            except (OSError, ValueError):
                status = None
            want = (f"{rid} {status}" if status in ("completed", "diverged") else f"{rid} not started" if status is None
                    else f"{rid} at epoch" if json.load(open(record)).get("checkpoints") else f"{rid} started")
            if want not in line:
                fail(f"--status: {line.strip()!r} does not say {want!r}")
    print(f"paper-grok.sh plans {len(steps)} steps in 2 lanes, each cell trained once, covering every grokking "
          "claim's arm without completed runs")


if __name__ == "__main__":
    main(sys.argv[1])
