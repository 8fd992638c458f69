"""The Python side of `stiefel certify --rule` (python/stiefel_rule): a rule written as plain
PyTorch functions is exported to the TorchScript file and config `stiefel` reads, what would fail is
said in Python, and the exported rule certifies. Run: python3 tests/python/test_stiefel_rule.py (STIEFEL:
the stiefel program, for the end-to-end test)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from typing import Dict, List, Tuple

import torch
from torch import Tensor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import stiefel_rule  # noqa: E402


def project(w: Tensor, x: Tensor) -> Tensor:
    a = w.transpose(-2, -1) @ x
    return x - w @ ((a + a.transpose(-2, -1)) / 2)


def retract(w: Tensor, eta: Tensor) -> Tensor:
    u, _, vh = torch.linalg.svd(w + eta, full_matrices=False)
    return u @ vh


def normalised_sgd(w: Tensor, g: Tensor, state: List[Tensor],
                   settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
    """Riemannian SGD with the step normalised per frame: scale-free, equivariant, on St(d, r)."""
    xi = project(w, g)
    norm = xi.pow(2).sum((-2, -1), keepdim=True).sqrt()
    return retract(w, -settings["lr"] * xi / (norm + settings["eps"])), state


def rgrad(w: Tensor, g: Tensor) -> Tensor:
    return project(w, g)


def transport(w: Tensor, w_new: Tensor, x: Tensor) -> Tensor:
    return project(w_new, x)


def metric(w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    return (x * y).sum((-2, -1))


def normalised_sgd_with_step(w: Tensor, g: Tensor, state: List[Tensor],
                             settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor], Tensor]:
    """The same, returning the step it retracts."""
    xi = project(w, g)
    norm = xi.pow(2).sum((-2, -1), keepdim=True).sqrt()
    eta = -settings["lr"] * xi / (norm + settings["eps"])
    return retract(w, eta), state, eta


def wrong_shape(w: Tensor, g: Tensor, state: List[Tensor],
                settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
    return w[:, :, :1], state


def wrong_dtype_for_float32(w: Tensor, g: Tensor, state: List[Tensor],
                            settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
    return w.double(), state


def not_scriptable(w, g, state, settings):  # no annotations: w is taken for a Tensor, settings too
    return w * settings["lr"], state


def qr_retract(w: Tensor, eta: Tensor) -> Tensor:
    q, r = torch.linalg.qr(w + eta)
    s = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
    return q * torch.where(s == 0, torch.ones_like(s), s).unsqueeze(-2)


class StiefelAdam(torch.optim.Optimizer):
    """Riemannian Adam as a user writes it: coupled weight decay, one second moment per frame (or per
    entry), the sign-fixed QR retraction, the first moment projected onto the new tangent space."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, elementwise=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, elementwise=elementwise))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p) if group["elementwise"] else p.new_zeros(p.shape[0], 1, 1)
                state["step"] += 1
                xi = self._project(p, grad)
                state["exp_avg"].mul_(beta1).add_(xi, alpha=1 - beta1)
                second = xi * xi if group["elementwise"] else xi.pow(2).sum((-2, -1), keepdim=True)
                state["exp_avg_sq"].mul_(beta2).add_(second, alpha=1 - beta2)
                bias1 = 1 - beta1 ** state["step"]
                bias2 = 1 - beta2 ** state["step"]
                denom = (state["exp_avg_sq"] / bias2).sqrt() + group["eps"]
                eta = self._project(p, -group["lr"] / bias1 * state["exp_avg"] / denom)
                p.copy_(qr_retract(p, eta))
                state["exp_avg"].copy_(self._project(p, state["exp_avg"]))
        return loss

    @staticmethod
    def _project(w: Tensor, x: Tensor) -> Tensor:
        return project(w, x)


class FunctionalAdam(torch.optim.Optimizer):
    """Gathers its parameters into lists for a functional update, as torch's own optimizers do."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            torch._foreach_add_(params, [p.grad for p in params], alpha=-group["lr"])


class CountingSGD(torch.optim.Optimizer):
    """Keeps its step count in an attribute of its own."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))
        self.count = 0

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                self.count += 1
                p.copy_(qr_retract(p, -group["lr"] * project(p, p.grad)))


class ListState(torch.optim.Optimizer):
    """Keeps a Python list in its state."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["history"] = [1.0]
                p.copy_(qr_retract(p, -group["lr"] * project(p, p.grad)))


class FromOptimizer(unittest.TestCase):
    def test_the_translation_steps_as_the_optimizer(self):
        step, settings = stiefel_rule.from_optimizer(StiefelAdam, lr=0.05, betas=(0.8, 0.99), weight_decay=0.01)
        self.assertEqual(settings, {"beta1": 0.8, "beta2": 0.99, "weight_decay": 0.01})
        # Another rate and eps than the probe's, through the settings; eight steps on frames of St(7, 3).
        gen = torch.Generator().manual_seed(3)
        w0 = torch.linalg.qr(torch.randn(4, 7, 3, generator=gen, dtype=torch.float64))[0]
        p = torch.nn.Parameter(w0.clone())
        opt = StiefelAdam([p], lr=0.2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01)
        w, state = w0, []
        for t in range(8):
            g = torch.randn(4, 7, 3, generator=gen, dtype=torch.float64)
            p.grad = g.clone()
            opt.step()
            w, state = step(w, g, state, dict(settings, lr=0.2, eps=1e-6))
            self.assertLess((w - p.detach()).abs().max().item(), 1e-13, f"step {t + 1}")
        self.assertEqual(state[2].item(), 8.0)  # the step count, a number in the optimizer's state

    def test_the_callers_state_is_left_as_it_was(self):
        step, settings = stiefel_rule.from_optimizer(StiefelAdam, lr=0.05)
        w = torch.linalg.qr(torch.randn(2, 5, 2, dtype=torch.float64))[0]
        g = torch.randn_like(w)
        w1, state = step(w, g, [], dict(settings, lr=0.05, eps=1e-8))
        kept = [s.clone() for s in state]
        step(w1, g, state, dict(settings, lr=0.05, eps=1e-8))
        for a, b in zip(kept, state):
            self.assertTrue(torch.equal(a, b))

    def test_says_what_it_cannot_translate(self):
        for cls, message in [(FunctionalAdam, "functional update"), (CountingSGD, "self.count"),
                             (ListState, "only tensors and numbers"), (dict, "not a torch.optim.Optimizer")]:
            with self.assertRaisesRegex(stiefel_rule.RuleError, message):
                stiefel_rule.from_optimizer(cls, lr=0.1)
        # The line of step is named.
        with self.assertRaisesRegex(stiefel_rule.RuleError, r"CountingSGD.step \(line \d+\)"):
            stiefel_rule.from_optimizer(CountingSGD, lr=0.1)
        # What the optimizer itself raises on its probe steps.
        with self.assertRaisesRegex(stiefel_rule.RuleError, "unexpected keyword argument 'momentum'"):
            stiefel_rule.from_optimizer(StiefelAdam, lr=0.1, momentum=0.9)


class Export(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "nsgd.pt")

    def test_writes_the_module_and_its_config(self):
        pt, config = stiefel_rule.export(normalised_sgd, self.path, name="nsgd", settings={"momentum": 0.5},
                                         properties=["on-manifold", "projection"], project=project, retract=retract)
        self.assertEqual((pt, config), (self.path, self.path[:-3] + ".json"))
        m = torch.jit.load(pt)
        w = torch.linalg.qr(torch.randn(2, 6, 3, dtype=torch.float64))[0]
        nxt, state = m(w, torch.randn_like(w), [], {"lr": 0.1, "eps": 1e-8})
        self.assertEqual(nxt.shape, w.shape)
        self.assertLess((nxt.transpose(-2, -1) @ nxt - torch.eye(3, dtype=torch.float64)).abs().max().item(), 1e-12)
        self.assertTrue(torch.allclose(m.project(w, w), torch.zeros_like(w), atol=1e-12))
        with open(config) as f:
            self.assertEqual(json.load(f), {"name": "nsgd", "properties": ["on-manifold", "projection"],
                                            "settings": {"momentum": 0.5}})
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["nsgd.json", "nsgd.pt"])  # no temporary left

    def test_says_what_would_fail(self):
        self.assertEqual(stiefel_rule.check(normalised_sgd, project=project, retract=retract), [])
        [problem] = stiefel_rule.check(wrong_shape)
        self.assertIn("shape [3, 5, 1] for [3, 5, 2]", problem)
        problems = stiefel_rule.check(not_scriptable)
        self.assertEqual(len(problems), 1)
        self.assertIn("not_scriptable", problems[0])
        self.assertIn("does not compile with TorchScript", problems[0])

    def test_refuses_a_declaration_stiefel_would_refuse(self):
        for kwargs, message in [({"properties": ["isometry"]}, "unknown properties"),
                                ({"properties": ["agrees-with-reference"]}, "needs a reference"),
                                ({"properties": ["projection"]}, "needs project="),
                                ({"properties": ["transport"]}, "needs transport="),
                                ({"properties": ["tangent-step"]}, "returns \\(frames, state, step\\)"),
                                ({"reference": "b3"}, "is not one of"),
                                ({"settings": {"lr": 0.1}}, "each claim sets lr and eps")]:
            with self.assertRaisesRegex(stiefel_rule.RuleError, message):
                stiefel_rule.export(normalised_sgd, self.path, **kwargs)
            self.assertFalse(os.path.exists(self.path))
        with self.assertRaisesRegex(stiefel_rule.RuleError, "shape"):
            stiefel_rule.export(wrong_shape, self.path)
        self.assertFalse(os.path.exists(self.path))

    def certify(self, name):
        """`stiefel certify` on the exported rule: asserts exit 0, returns each claim's (expected, observed)."""
        out = os.path.join(self.dir.name, name + ".cert.json")
        p = subprocess.run([os.environ["STIEFEL"], "certify", "--rule", self.path, "--rule-config",
                            self.path[:-3] + ".json", "--cases", "10", "--jobs", "2", "--out", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        with open(out) as f:
            return {k["id"]: (k["expected"], k["observed"]) for k in json.load(f)["claims"]}

    @unittest.skipUnless(os.environ.get("STIEFEL"), "STIEFEL names the stiefel program")
    def test_the_exported_rule_certifies(self):
        stiefel_rule.export(normalised_sgd, self.path, name="nsgd", properties=[
            "on-manifold", "frozen", "scale-free", "equivariance", "projection", "retraction"],
            project=project, retract=retract)
        verdicts = self.certify("nsgd")
        self.assertEqual(verdicts["rule-projection-nsgd"], ("certified", "certified"))
        self.assertEqual(verdicts["rule-decay-annihilated-nsgd"][0], "observed")

    @unittest.skipUnless(os.environ.get("STIEFEL"), "STIEFEL names the stiefel program")
    def test_every_component_and_the_step_certify(self):
        props = ["on-manifold", "tangent-step", "frozen", "scale-free", "equivariance", "projection",
                 "riemannian-gradient", "retraction", "retraction-second-order", "transport", "metric"]
        stiefel_rule.export(normalised_sgd_with_step, self.path, name="nsgd-all", properties=props,
                            project=project, retract=retract, rgrad=rgrad, transport=transport, metric=metric)
        verdicts = self.certify("nsgd-all")
        for prop, stem in (("tangent-step", "rule-tangent-step"), ("transport", "rule-transport"),
                           ("metric", "rule-metric"), ("riemannian-gradient", "rule-riemannian-gradient")):
            self.assertEqual(verdicts[f"{stem}-nsgd-all"], ("certified", "certified"), prop)

    @unittest.skipUnless(os.environ.get("STIEFEL"), "STIEFEL names the stiefel program")
    def test_an_exported_optimizer_certifies(self):
        """A torch.optim.Optimizer exported from its class: the per-frame moment certifies what it declares;
        the elementwise one is refuted on equivariance, and on nothing else."""
        props = ["on-manifold", "frozen", "decay-annihilated", "scale-free", "equivariance"]
        _, config = stiefel_rule.export_optimizer(StiefelAdam, self.path, options={"betas": (0.9, 0.99)},
                                                  name="stiefel-adam", properties=props)
        with open(config) as f:
            self.assertEqual(json.load(f)["settings"], {"beta1": 0.9, "beta2": 0.99, "weight_decay": 0.0})
        verdicts = self.certify("stiefel-adam")
        for prop in ("on-manifold", "decay-annihilated", "scale-free", "equivariance"):
            self.assertEqual(verdicts[f"rule-{prop}-stiefel-adam"], ("certified", "certified"), prop)
        stiefel_rule.export_optimizer(StiefelAdam, self.path, options={"elementwise": True}, name="elementwise-adam",
                                      properties=["on-manifold", "equivariance"])
        out = os.path.join(self.dir.name, "elementwise.cert.json")
        p = subprocess.run([os.environ["STIEFEL"], "certify", "--rule", self.path, "--rule-config",
                            self.path[:-3] + ".json", "--cases", "10", "--jobs", "2", "--out", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertEqual([line for line in p.stdout.splitlines() if line.startswith("FAILED ")],
                         ["FAILED rule-equivariance-elementwise-adam: refuted (expected certified)"])

    def test_a_float32_rule(self):
        _, config = stiefel_rule.export(normalised_sgd, self.path, name="nsgd-f32", dtype="float32",
                                        properties=["on-manifold", "projection"], project=project, retract=retract)
        with open(config) as f:
            self.assertEqual(json.load(f)["dtype"], "float32")
        m = torch.jit.load(self.path)
        w = torch.linalg.qr(torch.randn(2, 6, 3))[0]
        self.assertEqual(m(w, torch.randn_like(w), [], {"lr": 0.1, "eps": 1e-8})[0].dtype, torch.float32)
        [problem] = stiefel_rule.check(wrong_dtype_for_float32, dtype="float32")
        self.assertIn("dtype torch.float64, not float32", problem)
        with self.assertRaisesRegex(stiefel_rule.RuleError, "dtype 'float16' is not one of"):
            stiefel_rule.export(normalised_sgd, self.path, dtype="float16")
        if os.environ.get("STIEFEL"):
            stiefel_rule.export(normalised_sgd, self.path, name="nsgd-f32", dtype="float32", properties=[
                "on-manifold", "frozen", "scale-free", "equivariance", "projection", "retraction"],
                project=project, retract=retract)
            verdicts = self.certify("nsgd-f32")
            for stem in ("on-manifold", "scale-free", "equivariance", "projection", "retraction"):
                self.assertEqual(verdicts[f"rule-{stem}-nsgd-f32"], ("certified", "certified"), stem)

    @unittest.skipUnless(os.environ.get("STIEFEL"), "STIEFEL names the stiefel program")
    def test_properties_are_the_programs(self):
        p = subprocess.run([os.environ["STIEFEL"], "certify", "--list-rule-properties"], stdout=subprocess.PIPE,
                           text=True, check=True)
        self.assertEqual(tuple(line.split("\t")[0] for line in p.stdout.splitlines()), stiefel_rule.PROPERTIES)


if __name__ == "__main__":
    unittest.main()
