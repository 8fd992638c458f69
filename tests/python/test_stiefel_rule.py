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


def not_scriptable(w, g, state, settings):  # no annotations: w is taken for a Tensor, settings too
    return w * settings["lr"], state


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
    def test_properties_are_the_programs(self):
        p = subprocess.run([os.environ["STIEFEL"], "certify", "--list-rule-properties"], stdout=subprocess.PIPE,
                           text=True, check=True)
        self.assertEqual(tuple(line.split("\t")[0] for line in p.stdout.splitlines()), stiefel_rule.PROPERTIES)


if __name__ == "__main__":
    unittest.main()
