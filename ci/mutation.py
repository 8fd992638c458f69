#!/usr/bin/env python3
"""Mutation run of the certificate suite.

Builds `stiefel certify` from a copy of the source tree with one seeded mutant of core/ or of the
training core's update (training/: a LibTorch build) at a time (each a bug an implementation of the
paper's update plausibly makes), runs the full certificate,
and records whether it fails (the mutant is killed) and which claims fail. The unmutated tree must
certify first. Writes the mutation score to reports/mutation.json and reports/mutation.md.

Usage:
  ci/mutation.py [--work DIR] [--only ID[,ID...]] [--group all|core|trainer] [--cases N]
                 [--precision P] [--jobs J] [--resume]
  ci/mutation.py --check        # every mutant applies to exactly one place of the current tree
  ci/mutation.py --list
  ci/mutation.py --verify-reports  # the committed reports: complete, every mutant killed, their tree

Exit status: 0 when every mutant is killed (or --check passes), 1 when a mutant survives, 2 on a
usage error or when the unmutated tree does not certify.
"""
import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# id, file under the source root, the exact text replaced (it must occur once), its replacement,
# and what the bug is.
MUTANTS = [
    ("projector-without-sym", "core/stiefel/tangent_projection.h",
     "return g - w * sym(w.transpose() * g);", "return g - w * (w.transpose() * g);",
     "the tangent projector W sym(W^T G) replaced by W W^T G"),
    ("gauge-sym-for-skew", "core/stiefel/tangent_projection.h",
     "return w * skew(w.transpose() * g);", "return w * sym(w.transpose() * g);",
     "the gauge component W skew(W^T G) computed with sym"),
    ("canonical-untransposed", "core/stiefel/tangent_projection.h",
     "return g - w * (g.transpose() * w);", "return g - w * (w.transpose() * g);",
     "the canonical gradient G - W G^T W computed with W^T G"),
    ("eps-inside-sqrt", "core/stiefel/riemannian_adam.h",
     "const Scalar denom = sqrt(v) + eps;", "const Scalar denom = sqrt(v + eps);",
     "Adam's eps inside the square root"),
    ("first-bias-correction-omitted", "core/stiefel/riemannian_adam.h",
     "const Matrix<Scalar> m_hat = m / bias1;", "const Matrix<Scalar> m_hat = m;",
     "the first moment's bias correction omitted"),
    ("second-bias-correction-omitted", "core/stiefel/riemannian_adam.h",
     "const Matrix<Scalar> v_hat = v / bias2;", "const Matrix<Scalar> v_hat = v;",
     "the second moment's bias correction omitted"),
    ("second-moment-wrong-beta2", "core/stiefel/riemannian_adam.h",
     "const Scalar c = Scalar(1) - beta2;", "const Scalar c = Scalar(1) - beta2 * beta2;",
     "the second moment accumulated with weight 1 - beta2^2 in place of 1 - beta2"),
    ("mean-moment-over-rows", "core/stiefel/riemannian_adam.h",
     "(xi.squaredNorm() / Scalar(xi.rows() * xi.cols()))", "(xi.squaredNorm() / Scalar(xi.rows()))",
     "B2-mean's v_h averaged over d entries in place of d*r"),
    ("normal-component-left", "core/stiefel/riemannian_adam.h",
     "    bool capped = false;\n",
     "    eta += Scalar(1e-6) * eta.norm() * w / sqrt(Scalar(w.cols()));\n    bool capped = false;\n",
     "a normal component of 1e-6 ||eta|| left in the step"),
    ("cap-over-all-heads", "core/stiefel/riemannian_adam.h",
     "const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.cols()));",
     "const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.cols() * Index(frames.size())));",
     "the cap tau sqrt(r) taken over the [H,d,r] tensor's H*r columns"),
    # Bugs that show only where the cap binds (the paper's regime, eta_R = 1).
    ("cap-radius-from-d", "core/stiefel/riemannian_adam.h",
     "const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.cols()));",
     "const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.rows()));",
     "the cap's radius tau sqrt(d) in place of tau sqrt(r)"),
    ("cap-without-sqrt-r", "core/stiefel/riemannian_adam.h",
     "const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.cols()));", "const Scalar cap = *hyper.cap_tau;",
     "the cap tau in place of tau sqrt(r)"),
    ("cap-rescales-moment", "core/stiefel/riemannian_adam.h",
     "        eta *= cap / norm;\n", "        m *= cap / norm;\n",
     "the cap's rescale applied to the first moment instead of the step"),
    ("cap-radius-paper-constant", "core/stiefel/riemannian_adam.h",
     "const Scalar cap = *hyper.cap_tau * sqrt(Scalar(w.cols()));", "const Scalar cap = Scalar(0.4);",
     "the cap read as the constant 0.4 (tau sqrt(r) at the paper's r = 16) at every r"),
    ("cap-rescale-squared", "core/stiefel/riemannian_adam.h",
     "        eta *= cap / norm;\n", "        eta *= (cap / norm) * (cap / norm);\n",
     "the cap's rescale applied twice: a capped step shrunk below the cap's radius"),
    ("cap-before-reprojection", "core/stiefel/riemannian_adam.h",
     "      const Scalar norm = eta.norm();",
     "      const Scalar norm = (hyper.lr * detail::adam_quotient(hyper.moment, m_hat, v_hat, hyper.eps)).norm();",
     "the cap judged on the quotient before it is re-projected onto the tangent space"),
    ("moment-not-reprojected", "core/stiefel/riemannian_adam.h",
     "out.state.m[h] = reproject(hyper.map, out.frames[h], out.state.m[h]);", "(void)0;",
     "the stored first moment not re-projected at the new frame"),
    ("polar-wrong-side", "core/stiefel/retraction.h",
     "return svd.matrixU() * svd.matrixV().transpose();", "return svd.matrixU() * svd.matrixV();",
     "the polar factor U V (V untransposed) in place of U V^T"),
    ("gram-inverse-not-sqrt", "core/stiefel/retraction.h",
     "inv_sqrt(i) = Scalar(1) / sqrt(lambda(i));", "inv_sqrt(i) = Scalar(1) / lambda(i);",
     "the polar retraction's (I + eta^T eta)^(-1/2) computed as (I + eta^T eta)^(-1)"),
    ("sgd-unprojected", "core/stiefel/riemannian_sgd.h",
     "return -hyper.lr * apply_tangent_map(hyper.map, w, g);", "return -hyper.lr * g;",
     "Riemannian SGD stepping along the Euclidean gradient"),
    ("frozen-moves", "core/stiefel/riemannian_sgd.h",
     "h.lr = Scalar(0);", "h.lr = Scalar(1) / Scalar(1000000);",
     "the frozen arm with a rate of 1e-6 in place of 0"),
    ("attention-ds-untransposed", "core/stiefel/attention_score.h",
     "(ds.transpose() * xq)", "(ds * xq)",
     "dS untransposed in the key gradient G_K"),
    ("attention-scale-missing-in-gq", "core/stiefel/attention_score.h",
     "out.grad_q.push_back(scale * x.transpose() * (ds * xk));",
     "out.grad_q.push_back(x.transpose() * (ds * xk));",
     "the 1/sqrt(r) score scale missing from G_Q"),
    ("exponential-truncated", "core/stiefel/exponential.h",
     "<= eps * sum.cwiseAbs().maxCoeff() / Scalar(16)", "<= Scalar(1e-10) * sum.cwiseAbs().maxCoeff()",
     "the matrix exponential's series truncated at 1e-10"),
    # The training core's own update (a LibTorch build): the trainer's claims must kill these.
    ("trainer-cap-over-all-heads", "training/src/frame_rules.cpp",
     "const double cap = *h.cap_tau * std::sqrt(double(w.size(2)));",
     "const double cap = *h.cap_tau * std::sqrt(double(w.size(2) * w.size(0)));",
     "the trainer's cap tau sqrt(r) taken over the batch's B*r columns"),
    ("trainer-cap-radius-from-d", "training/src/frame_rules.cpp",
     "const double cap = *h.cap_tau * std::sqrt(double(w.size(2)));",
     "const double cap = *h.cap_tau * std::sqrt(double(w.size(1)));",
     "the trainer's cap radius tau sqrt(d) in place of tau sqrt(r)"),
    ("trainer-cap-without-sqrt-r", "training/src/frame_rules.cpp",
     "const double cap = *h.cap_tau * std::sqrt(double(w.size(2)));", "const double cap = *h.cap_tau;",
     "the trainer's cap tau in place of tau sqrt(r)"),
    ("trainer-cap-rescales-moment", "training/src/frame_rules.cpp",
     "      eta = eta * factor.view({-1, 1, 1});", "      st.m = st.m * factor.view({-1, 1, 1});",
     "the trainer's cap rescale applied to the first moment instead of the step"),
    ("trainer-cap-before-reprojection", "training/src/frame_rules.cpp",
     "      const auto norm = frob(eta);", "      const auto norm = frob(-h.lr * q);",
     "the trainer's cap judged on the quotient before it is re-projected onto the tangent space"),
    ("trainer-eps-inside-sqrt", "training/src/frame_rules.cpp",
     "const auto denom = (st.v / bias2).sqrt() + h.eps;", "const auto denom = (st.v / bias2 + h.eps).sqrt();",
     "the trainer's Adam eps inside the square root"),
    ("trainer-first-bias-correction-omitted", "training/src/frame_rules.cpp",
     "const auto m_hat = st.m / bias1;", "const auto m_hat = st.m;",
     "the trainer's first-moment bias correction omitted"),
    ("trainer-mean-moment-over-rows", "training/src/frame_rules.cpp",
     "/ double(xi.size(1) * xi.size(2))", "/ double(xi.size(1))",
     "the trainer's B2-mean v_h averaged over d entries in place of d*r"),
    ("trainer-column-moment-over-rows", "training/src/frame_rules.cpp",
     "st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2).sum(-2, true);",
     "st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2).sum(-1, true);",
     "the trainer's per-column v summed along the rows (a per-row moment)"),
    ("trainer-second-moment-wrong-beta2", "training/src/frame_rules.cpp",
     "st.v = h.beta2 * st.v + (1 - h.beta2) * xi.pow(2).sum({-2, -1}, true);",
     "st.v = h.beta2 * st.v + (1 - h.beta2 * h.beta2) * xi.pow(2).sum({-2, -1}, true);",
     "the trainer's per-frame v accumulated with weight 1 - beta2^2"),
    ("trainer-grassmann-as-stiefel", "training/src/frame_rules.cpp",
     "      return g - w.bmm(bt(w).bmm(g));", "      return batched_project_tangent(w, g);",
     "the trainer's horizontal (Grassmann) map replaced by the Stiefel projection"),
    ("trainer-canonical-untransposed", "training/src/frame_rules.cpp",
     "      return g - w.bmm(bt(g).bmm(w));", "      return g - w.bmm(bt(w).bmm(g));",
     "the trainer's canonical gradient G - W G^T W computed with W^T G"),
    ("trainer-sgd-unprojected", "training/src/frame_rules.cpp",
     "eta = -h.lr * xi;", "eta = -h.lr * g;",
     "the trainer's Riemannian SGD stepping along the Euclidean gradient"),
    ("trainer-polar-wrong-side", "training/src/frame_rules.cpp",
     "return u.bmm(vh);", "return u.bmm(bt(vh));",
     "the trainer's polar factor U V (V^H transposed back) in place of U V^T"),
    ("trainer-no-write-back", "training/src/frame_optimizer.cpp",
     "p.copy_(from_frames(st.master, p, options.layout_).to(p.dtype()));", "(void)0;",
     "FrameOptimizer not writing the stepped master back to the parameter"),
]


def needs_torch(mutant):
    """Mutants of the training core need a LibTorch build (the trainer's rule claims)."""
    return mutant[1].startswith("training/")


def fail(msg, code=2):
    print(f"ci/mutation.py: {msg}", file=sys.stderr)
    sys.exit(code)


def apply(text, mutant):
    mid, path, find, repl, _ = mutant
    n = text.count(find)
    if n != 1:
        raise ValueError(f"mutant {mid}: the text it replaces occurs {n} times in {path} (must be once)")
    return text.replace(find, repl)


def write_atomically(path, content):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=os.path.basename(path) + ".tmp.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def check(source):
    bad = 0
    for m in MUTANTS:
        path = os.path.join(source, m[1])
        try:
            with open(path) as f:
                apply(f.read(), m)
        except (OSError, ValueError) as e:
            print(e, file=sys.stderr)
            bad += 1
    ids = [m[0] for m in MUTANTS]
    if len(set(ids)) != len(ids):
        print("mutant ids are not unique", file=sys.stderr)
        bad += 1
    print(f"{len(MUTANTS) - bad} of {len(MUTANTS)} mutants apply to exactly one place")
    return 0 if bad == 0 else 1


# The sources the certificate is built from: a report holds results for their digest only.
DIGEST_ROOMS = ("core/", "rules/", "arms/", "certificates/", "properties/", "cli/", "training/")


def tree_digest(root, files):
    h = hashlib.sha256()
    for f in sorted(files):
        if f.startswith(DIGEST_ROOMS) and os.path.isfile(os.path.join(root, f)):
            h.update(f.encode() + b"\0" + open(os.path.join(root, f), "rb").read())
    return h.hexdigest()


def verify_reports(source, only="all"):
    """The committed reports: each complete, of exactly this script's mutants in its group, every one
    killed; and whether they were made on this tree (their digest), said either way."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=source,
                           capture_output=True, check=True).stdout.decode().split("\0")
    digest = tree_digest(source, [f for f in files if f])
    bad = 0
    for group, stem in (("core", "mutation"), ("trainer", "mutation-trainer")):
        if only not in ("all", group):
            continue
        path = os.path.join(source, "reports", stem + ".json")
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            bad += 1
            continue
        want = [m[0] for m in MUTANTS if needs_torch(m) == (group == "trainer")]
        have = [m.get("id") for m in r.get("mutants", [])]
        survivors = [m.get("id") for m in r.get("mutants", []) if m.get("status") not in ("killed", "crashed")]
        problems = []
        if not r.get("complete"):
            problems.append("not complete (a --resume run stopped before its last mutant)")
        if have != want:
            problems.append("its mutants are not this script's " + group + " mutants: missing "
                            + (", ".join(sorted(set(want) - set(have))) or "none") + "; unknown "
                            + (", ".join(sorted(set(have) - set(want))) or "none"))
        if survivors:
            problems.append("survived: " + ", ".join(survivors))
        tree = "this tree" if r.get("tree_digest") == digest else \
            f"another tree (digest {str(r.get('tree_digest'))[:12]}, this tree's {digest[:12]}): rerun ci/mutation.py"
        if problems:
            bad += 1
            print(f"{path}: " + "; ".join(problems), file=sys.stderr)
        else:
            print(f"{path}: {len(have)} of {len(want)} {group} mutants killed, made on {tree}")
    return 0 if bad == 0 else 1


def run(cmd, log, timeout=None, cwd=None):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, cwd=cwd).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    ap.add_argument("--source", default=root, help="source tree (default: this repository)")
    ap.add_argument("--work", default=None, help="work folder (default: SOURCE/build/mutation)")
    ap.add_argument("--report", default=None, help="report stem (default: SOURCE/reports/mutation)")
    ap.add_argument("--only", default="", help="comma-separated mutant ids")
    ap.add_argument("--group", choices=["all", "core", "trainer"], default="all",
                    help="core: the mutants of core/ (no LibTorch build); trainer: those of training/")
    ap.add_argument("--cases", type=int, default=None, help="cases per claim passed to certify")
    ap.add_argument("--precision", choices=["double", "mp50", "both"], default=None)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--check", action="store_true", help="only check that every mutant applies")
    ap.add_argument("--resume", action="store_true",
                    help="keep the mutants the report already holds for the same tree and options")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--verify-reports", action="store_true",
                    help="check the committed reports: complete, every mutant of this script killed, and "
                         "whether they were made on this tree")
    a = ap.parse_args()
    if not a.source or not os.path.isfile(os.path.join(a.source, "CMakeLists.txt")):
        fail(f"--source {a.source!r}: not a stiefel source tree (no CMakeLists.txt)")
    if a.list:
        for m in MUTANTS:
            print(f"{m[0]:32s} {m[1]:36s} {m[4]}")
        return 0
    if a.check:
        return check(a.source)
    if a.verify_reports:
        return verify_reports(a.source, a.group)
    if a.cases is not None and a.cases < 1:
        fail(f"--cases {a.cases}: must be at least 1")
    selected = [m for m in MUTANTS if a.group == "all" or needs_torch(m) == (a.group == "trainer")]
    if a.only:
        want = a.only.split(",")
        unknown = [w for w in want if w not in {m[0] for m in MUTANTS}]
        if unknown:
            fail(f"--only: unknown mutant id(s) {', '.join(unknown)} (see --list)")
        selected = [m for m in selected if m[0] in want]
    if check(a.source) != 0:
        fail("a mutant does not apply to the current tree; update MUTANTS")

    work = os.path.abspath(a.work or os.path.join(a.source, "build", "mutation"))
    src, bld, logs = (os.path.join(work, x) for x in ("src", "build", "logs"))
    os.makedirs(logs, exist_ok=True)
    # A copy of the tree (tracked and untracked, not ignored files; results/ left out).
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=a.source,
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in files:
        f = f.decode()
        if not f or f.startswith("results/") or not os.path.isfile(os.path.join(a.source, f)):
            continue
        dst = os.path.join(src, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.exists(dst) or open(os.path.join(a.source, f), "rb").read() != open(dst, "rb").read():
            # A fresh modification time (not copy2's), so that the build sees every change,
            # including the restoring of a mutant left behind by an interrupted run.
            shutil.copy(os.path.join(a.source, f), dst)
            os.utime(dst)
    build_log = os.path.join(logs, "build.log")
    # Two builds: without LibTorch for core/'s mutants (faster), with it for the trainer's.
    builds = {False: bld, True: bld + "-torch"}
    for torch in sorted({needs_torch(m) for m in selected}):
        if run(["cmake", "-S", src, "-B", builds[torch], "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                f"-DSTIEFEL_WITH_TORCH={'ON' if torch else 'OFF'}", "-DSTIEFEL_BUILD_TESTS=OFF"], build_log) != 0:
            fail(f"configuring the mutation build failed; see {build_log}")

    certify_args = ["--group", "all"]  # the paper-size claims kill mutants too
    if a.cases is not None:
        certify_args += ["--cases", str(a.cases)]
    if a.precision:
        certify_args += ["--precision", a.precision]
    if a.jobs is not None:
        certify_args += ["--jobs", str(a.jobs)]

    def build_and_certify(tag, torch=False):
        t0 = time.monotonic()
        bld = builds[torch]
        if run(["cmake", "--build", bld, "--target", "stiefel"], build_log) != 0:
            return {"status": "build-failed", "build_seconds": time.monotonic() - t0}
        t1 = time.monotonic()
        cert = os.path.join(work, "certificates", tag + ".json")
        os.makedirs(os.path.dirname(cert), exist_ok=True)
        if os.path.exists(cert):
            os.unlink(cert)
        log = os.path.join(logs, tag + ".log")
        if os.path.exists(log):
            os.unlink(log)
        try:
            rc = run([os.path.join(bld, "stiefel"), "certify", "--out", cert] + certify_args, log, timeout=3600)
        except subprocess.TimeoutExpired:
            rc = "timeout"
        t2 = time.monotonic()
        out = {"build_seconds": round(t1 - t0, 1), "certify_seconds": round(t2 - t1, 1), "exit_code": rc}
        failing = []
        if os.path.exists(cert):
            with open(cert) as f:
                c = json.load(f)
            for k in c["claims"]:
                if not k["meets_expectation"]:
                    failing.append({"claim": k["id"], "observed": k["observed"], "expected": k["expected"]})
        out["failing_claims"] = failing
        out["status"] = ("killed" if rc == 1 and failing else "survived" if rc == 0
                         else "crashed" if isinstance(rc, int) and rc not in (0, 1, 2) else "error")
        return out

    # What the certificate is built from: a report holds results for this digest only.
    digest = tree_digest(src, [f.decode() for f in files])
    stem = os.path.abspath(a.report or os.path.join(a.source, "reports", "mutation"))
    previous = {}
    base = None
    if a.resume and os.path.exists(stem + ".json"):
        with open(stem + ".json") as f:
            old = json.load(f)
        if old.get("tree_digest") == digest and old.get("certify_options") == (certify_args or ["(defaults)"]):
            previous = {r["id"]: r for r in old["mutants"]}
            base = old["baseline"]
            if "build_seconds" in base:  # a report of one build (core/ only)
                base = {"core": base}
            print(f"resuming: {len(previous)} mutant(s) already run on this tree", flush=True)
        else:
            print("resume: the report is of another tree or other options; starting afresh", flush=True)

    if base is None:
        base = {}
    for torch in sorted({needs_torch(m) for m in selected if m[0] not in previous}):
        key = "libtorch" if torch else "core"
        if key in base:
            continue
        print(f"baseline (unmutated tree, {key} build) ...", flush=True)
        b = build_and_certify("baseline-" + key, torch)
        if b["status"] != "survived":
            fail(f"the unmutated tree does not certify ({b['status']}, {key} build); see {logs}")
        print(f"  certifies: build {b['build_seconds']} s, certify {b['certify_seconds']} s", flush=True)
        base[key] = b

    rows = [previous[m[0]] for m in selected if m[0] in previous]
    for m in selected:
        if m[0] in previous:
            continue
        mid, rel, _, _, what = m
        path = os.path.join(src, rel)
        with open(path) as f:
            original = f.read()
        try:
            with open(path, "w") as f:
                f.write(apply(original, m))
            print(f"{mid} ...", flush=True)
            r = build_and_certify(mid, needs_torch(m))
        finally:
            with open(path, "w") as f:
                f.write(original)
        r.update({"id": mid, "file": rel, "bug": what})
        names = ", ".join(x["claim"] for x in r.get("failing_claims", []))
        print(f"  {r['status']}: {names or '-'}", flush=True)
        rows.append(r)
        write_report(stem, rows, base, certify_args, digest, len(selected))
    write_report(stem, rows, base, certify_args, digest, len(selected))
    killed = sum(r["status"] in ("killed", "crashed") for r in rows)
    print(f"mutation score {killed}/{len(rows)}; report {stem}.md")
    return 0 if killed == len(rows) else 1


def write_report(stem, rows, base, certify_args, digest, planned):
    # The rows in the script's order, whatever order a resumed run ran them in.
    order = {m[0]: k for k, m in enumerate(MUTANTS)}
    rows = sorted(rows, key=lambda r: order.get(r["id"], len(order)))
    # A crash (exit status other than 0, 1, 2) also fails the certificate: it counts as killed.
    killed = sum(r["status"] in ("killed", "crashed") for r in rows)
    report = {
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "ci/mutation.py " + " ".join(sys.argv[1:]),
        "tree_digest": digest,
        "complete": len(rows) == planned,
        "planned": planned,
        "certify_options": certify_args or ["(defaults)"],
        "baseline": base,
        "mutants": rows,
        "score": {"killed": killed, "total": len(rows),
                  "percent": round(100.0 * killed / len(rows), 1) if rows else None},
    }
    write_atomically(stem + ".json", json.dumps(report, indent=2) + "\n")
    lines = ["# Mutation run of the certificate suite", "",
             f"Generated {report['generated_utc']} by `{report['command']}`; `stiefel certify` options: "
             f"{' '.join(report['certify_options'])}.",
             "Each mutant is one seeded bug in `core/` or in the training core's update (`training/`, "
             "built with LibTorch); the tree is rebuilt with it and the whole "
             "certificate is run. A mutant is killed when `stiefel certify` fails (exit 1).", "",
             f"**Mutation score: {killed} of {len(rows)} killed"
             + (f" ({report['score']['percent']}%)" if rows else "") + ".**"
             + ("" if len(rows) == planned else f" (partial: {len(rows)} of {planned} mutants run; "
                                                 "`ci/mutation.py --resume` continues)"), "",
             "Unmutated tree: certifies ("
             + "; ".join(f"{k} build: build {b['build_seconds']} s, certify {b['certify_seconds']} s"
                         for k, b in base.items()) + ").", "",
             "| mutant | file | bug | status | claims that fail | certify s |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        names = ", ".join(f"`{x['claim']}`" for x in r.get("failing_claims", [])) or "–"
        lines.append(f"| `{r['id']}` | `{r['file']}` | {r['bug']} | {r['status']} | {names} | "
                     f"{r.get('certify_seconds', '–')} |")
    write_atomically(stem + ".md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
