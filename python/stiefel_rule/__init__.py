"""Export a Stiefel optimizer written in plain PyTorch for `stiefel certify --rule`.

A rule is a step function on a batch of H frames of St(d, r)::

    def step(w: Tensor, g: Tensor, state: List[Tensor],
             settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        ...

``w`` and ``g`` are ``[H, d, r]`` float64 (the frames, the Euclidean gradient); ``state`` is ``[]``
at the first step and then what the previous step returned; ``settings`` holds ``lr`` and ``eps``
(each claim sets them) and what you declare in ``settings=``. It may come with its components,
``project(w, x) -> Tensor`` and ``retract(w, eta) -> Tensor``, each certified on its own.

    import stiefel_rule
    problems = stiefel_rule.check(step, settings={"beta1": 0.9, "beta2": 0.999})
    stiefel_rule.export(step, "my_rule.pt", name="my-rule", settings={...},
                        properties=["on-manifold", "scale-free", "equivariance"],
                        project=project, retract=retract)

``export`` writes ``my_rule.pt`` (TorchScript) and ``my_rule.json`` (its --rule-config) beside it;
``check`` says, in Python, what would fail: a function TorchScript cannot compile (with the
line), a signature that is not the rule's, a probe step that raises or returns frames of another
shape, dtype, or that are not finite. Each function must be TorchScript-compatible: type
annotations on every argument, no Python objects other than tensors, numbers, lists and dicts.

A ``torch.optim.Optimizer`` is not exported as it is: its ``step`` is Python, which TorchScript does not
compile, and tracing it bakes its Python-float hyperparameters (lr among them, which each claim sets)
into the file as constants. Write its update as a step function: the moments it keeps in
``self.state`` go into ``state`` (as tensors, the step count included), its ``param_groups``
hyperparameters into ``settings``.

Needs Debian's python3-torch (1.13, the LibTorch `stiefel` links): a file saved by a newer PyTorch
may not load.
"""
import itertools
import json
import linecache
import os
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import torch
from torch import Tensor

__all__ = ["PROPERTIES", "RuleError", "check", "export", "module"]

# The properties a rule may declare (certificates::rule_property_names()).
PROPERTIES = ("agrees-with-reference", "on-manifold", "frozen", "decay-annihilated", "scale-free", "equivariance",
              "projection", "retraction")
REFERENCES = ("b2", "b2-mean-moment", "b2-column", "b2m", "b2m-can")


_counter = itertools.count()


class RuleError(ValueError):
    """What stops a rule from being exported: its message says which function and why."""


_FORWARD = '''
def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
            settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
    return _step(w, g, state, settings)
'''
_PROJECT = '''
@torch.jit.export
def project(self, w: Tensor, x: Tensor) -> Tensor:
    return _project(w, x)
'''
_RETRACT = '''
@torch.jit.export
def retract(self, w: Tensor, eta: Tensor) -> Tensor:
    return _retract(w, eta)
'''


def _script(fn: Callable, what: str):
    if isinstance(fn, torch.jit.ScriptFunction):
        return fn
    try:
        return torch.jit.script(fn)
    except Exception as e:  # torch.jit.frontend errors, RuntimeError with the offending line
        raise RuleError(f"{what} ({getattr(fn, '__name__', fn)}) does not compile with TorchScript: {e}") from None


def module(step: Callable, project: Optional[Callable] = None, retract: Optional[Callable] = None):
    """The scripted torch.nn.Module whose forward is ``step`` (and whose project / retract are the
    components given). Raises RuleError naming the function that does not compile."""
    namespace = {"torch": torch, "Tensor": Tensor, "Dict": Dict, "List": List, "Tuple": Tuple,
                 "_step": _script(step, "step")}
    source = _FORWARD
    if project is not None:
        namespace["_project"] = _script(project, "project")
        source += _PROJECT
    if retract is not None:
        namespace["_retract"] = _script(retract, "retract")
        source += _RETRACT
    # TorchScript reads a method's source through inspect, which finds generated code in linecache.
    filename = f"<stiefel_rule {next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    methods = {k: namespace[k] for k in ("forward", "project", "retract") if k in namespace}
    Rule = type("Rule", (torch.nn.Module,), methods)
    try:
        return torch.jit.script(Rule())
    except Exception as e:
        raise RuleError(f"the rule's module does not compile with TorchScript: {e}") from None


def _probe_settings(settings: Dict[str, object]) -> Dict[str, float]:
    out = {"lr": 0.1, "eps": 1e-8, "beta1": 0.9, "beta2": 0.999}
    for k, v in settings.items():
        if isinstance(v, bool) or v is None:
            continue
        out[k] = float(v)
    return out


def check(step: Callable, settings: Optional[Dict[str, object]] = None, project: Optional[Callable] = None,
          retract: Optional[Callable] = None) -> List[str]:
    """What `stiefel certify --rule` would refuse, as a list of messages (empty: nothing): the
    functions compiled with TorchScript, then two probe steps on three frames of St(5, 2) with the
    given settings, as `stiefel` probes a rule at load."""
    try:
        m = module(step, project, retract)
    except RuleError as e:
        return [str(e)]
    problems = []
    gen = torch.Generator().manual_seed(20260916)
    w = torch.linalg.qr(torch.randn(3, 5, 2, generator=gen, dtype=torch.float64))[0]
    state: List[Tensor] = []
    s = _probe_settings(settings or {})
    for t in range(2):
        g = torch.randn(3, 5, 2, generator=gen, dtype=torch.float64)
        try:
            nxt, state = m(w, g, state, s)
        except Exception as e:
            return problems + [f"step raised on probe step {t + 1} with settings {s}: {e}"]
        if nxt.shape != w.shape:
            return problems + [f"step returned frames of shape {list(nxt.shape)} for {list(w.shape)}"]
        if nxt.dtype != torch.float64:
            return problems + [f"step returned frames of dtype {nxt.dtype}, not float64"]
        if not torch.isfinite(nxt).all():
            return problems + ["step returned frames that are not finite on a probe step"]
        w = nxt
    for name in ("project", "retract"):
        if getattr(m, name, None) is None or (name == "project" and project is None) or \
                (name == "retract" and retract is None):
            continue
        try:
            out = getattr(m, name)(w, torch.zeros_like(w))
        except Exception as e:
            problems.append(f"{name}(w, x) raised: {e}")
            continue
        if out.shape != w.shape or out.dtype != w.dtype:
            problems.append(f"{name}(w, x) returned {out.dtype} {list(out.shape)} for {w.dtype} {list(w.shape)}")
    return problems


def export(step: Callable, path: str, *, name: Optional[str] = None, settings: Optional[Dict[str, object]] = None,
           properties: Iterable[str] = (), reference: Optional[str] = None, project: Optional[Callable] = None,
           retract: Optional[Callable] = None) -> Tuple[str, str]:
    """Writes the rule to ``path`` (TorchScript) and its --rule-config beside it (``.json``), each
    atomically; returns both paths. Raises RuleError for what `stiefel` would refuse."""
    properties = list(properties)
    unknown = [p for p in properties if p not in PROPERTIES]
    if unknown:
        raise RuleError(f"unknown properties {unknown}: a rule declares some of {list(PROPERTIES)}")
    if reference is not None and reference not in REFERENCES:
        raise RuleError(f"reference {reference!r} is not one of {list(REFERENCES)}")
    if "agrees-with-reference" in properties and reference is None:
        raise RuleError("'agrees-with-reference' needs a reference")
    if "projection" in properties and project is None:
        raise RuleError("'projection' needs project=")
    if "retraction" in properties and retract is None:
        raise RuleError("'retraction' needs retract=")
    settings = dict(settings or {})
    for k in ("lr", "eps"):
        if k in settings:
            raise RuleError(f"settings[{k!r}]: each claim sets lr and eps")
    problems = check(step, settings, project, retract)
    if problems:
        raise RuleError("; ".join(problems))
    if not path.endswith(".pt"):
        raise RuleError(f"{path}: the rule's file ends in .pt")
    config_path = path[: -len(".pt")] + ".json"
    config: Dict[str, object] = {"properties": properties, "settings": settings}
    if name is not None:
        config["name"] = name
    if reference is not None:
        config["reference"] = reference
    m = module(step, project, retract)
    m.save(path + ".tmp")
    os.replace(path + ".tmp", path)
    with open(config_path + ".tmp", "w") as f:
        json.dump(config, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(config_path + ".tmp", config_path)
    return path, config_path
