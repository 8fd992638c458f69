"""Export a Stiefel optimizer written in plain PyTorch for `stiefel certify --rule`.

A rule is a step function on a batch of H frames of St(d, r)::

    def step(w: Tensor, g: Tensor, state: List[Tensor],
             settings: Dict[str, float]) -> Tuple[Tensor, List[Tensor]]:
        ...

``w`` and ``g`` are ``[H, d, r]`` float64, or float32 for ``dtype="float32"`` (the frames, the Euclidean
gradient); ``state`` is ``[]``
at the first step and then what the previous step returned; ``settings`` holds ``lr`` and ``eps``
(each claim sets them) and what you declare in ``settings=``. It may return the step it retracted as a
third result (``Tuple[Tensor, List[Tensor], Tensor]``: the property ``tangent-step``). It may come
with its components, each certified on its own: ``project(w, x)``, ``rgrad(w, g)``,
``retract(w, eta)``, ``transport(w, w_new, x)`` (each -> Tensor of w's shape) and
``metric(w, x, y)`` (-> Tensor [H], one inner product per frame).

    import stiefel_rule
    problems = stiefel_rule.check(step, settings={"beta1": 0.9, "beta2": 0.999})
    stiefel_rule.export(step, "my_rule.pt", name="my-rule", settings={...},
                        properties=["on-manifold", "scale-free", "equivariance"],
                        project=project, retract=retract, rgrad=rgrad, transport=transport, metric=metric, dtype=dtype)

``export`` writes ``my_rule.pt`` (TorchScript) and ``my_rule.json`` (its --rule-config) beside it;
``check`` says, in Python, what would fail: a function TorchScript cannot compile (with the
line), a signature that is not the rule's, a probe step that raises or returns frames of another
shape, dtype, or that are not finite. Each function must be TorchScript-compatible: type
annotations on every argument, no Python objects other than tensors, numbers, lists and dicts.

A ``torch.optim.Optimizer`` acting on one ``[H, d, r]`` parameter, with Python-float hyperparameters
and a Python state dict, is exported from its class::

    stiefel_rule.export_optimizer(MyStiefelAdam, "my_adam.pt", options={"betas": (0.9, 0.99)},
                                  properties=["on-manifold", "equivariance"])

Its ``step`` is translated into a step function (``from_optimizer``; see ``stiefel_rule.optimizer``
for what it translates), its float hyperparameters become the rule's settings (lr and eps set by
each claim, ``betas`` as beta1 and beta2), and the translation must give the optimizer's own frames
and state on three probe steps before anything is written.

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

__all__ = ["PROPERTIES", "RuleError", "check", "export", "export_optimizer", "from_optimizer", "module"]

# The properties a rule may declare (`stiefel certify --list-rule-properties`; the tests hold the two
# lists equal), and the component each needs.
PROPERTIES = ("agrees-with-reference", "on-manifold", "tangent-step", "frozen", "decay-annihilated", "scale-free",
              "equivariance", "projection", "riemannian-gradient", "retraction", "retraction-second-order",
              "transport", "metric")
DTYPES = {"float64": torch.float64, "float32": torch.float32}
REFERENCES = ("b2", "b2-mean-moment", "b2-column", "b2m", "b2m-can", "b2-grassmann")
# A component's arguments, and the properties that need it.
COMPONENTS = {"project": "w: Tensor, x: Tensor", "rgrad": "w: Tensor, g: Tensor", "retract": "w: Tensor, eta: Tensor",
              "transport": "w: Tensor, w_new: Tensor, x: Tensor", "metric": "w: Tensor, x: Tensor, y: Tensor"}
NEEDS = {"projection": "project", "riemannian-gradient": "rgrad", "retraction": "retract",
         "retraction-second-order": "retract", "transport": "transport", "metric": "metric"}


_counter = itertools.count()


class RuleError(ValueError):
    """What stops a rule from being exported: its message says which function and why."""


_FORWARD = '''
def forward(self, w: Tensor, g: Tensor, state: List[Tensor],
            settings: Dict[str, float]) -> {returns}:
    return _step(w, g, state, settings)
'''
_COMPONENT = '''
@torch.jit.export
def {name}(self, {args}) -> Tensor:
    return _{name}({names})
'''


def _script(fn: Callable, what: str):
    if isinstance(fn, torch.jit.ScriptFunction):
        return fn
    try:
        return torch.jit.script(fn)
    except Exception as e:  # torch.jit.frontend errors, RuntimeError with the offending line
        raise RuleError(f"{what} ({getattr(fn, '__name__', fn)}) does not compile with TorchScript: {e}") from None


def _returns_step(scripted) -> bool:
    """Whether a scripted step function returns (frames, state, step)."""
    t = scripted.schema.returns[0].type
    return isinstance(t, torch._C.TupleType) and len(t.elements()) == 3


def module(step: Callable, project: Optional[Callable] = None, retract: Optional[Callable] = None,
           rgrad: Optional[Callable] = None, transport: Optional[Callable] = None,
           metric: Optional[Callable] = None):
    """The scripted torch.nn.Module whose forward is ``step`` and whose methods are the components
    given. Raises RuleError naming the function that does not compile."""
    scripted = _script(step, "step")
    namespace = {"torch": torch, "Tensor": Tensor, "Dict": Dict, "List": List, "Tuple": Tuple, "_step": scripted}
    returns = "Tuple[Tensor, List[Tensor], Tensor]" if _returns_step(scripted) else "Tuple[Tensor, List[Tensor]]"
    source = _FORWARD.format(returns=returns)
    given = {"project": project, "rgrad": rgrad, "retract": retract, "transport": transport, "metric": metric}
    for name, fn in given.items():
        if fn is None:
            continue
        namespace["_" + name] = _script(fn, name)
        args = COMPONENTS[name]
        source += _COMPONENT.format(name=name, args=args, names=", ".join(a.split(":")[0] for a in args.split(", ")))
    # TorchScript reads a method's source through inspect, which finds generated code in linecache.
    filename = f"<stiefel_rule {next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    methods = {k: namespace[k] for k in ("forward",) + tuple(COMPONENTS) if k in namespace}
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


def _dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise RuleError(f"dtype {dtype!r} is not one of {list(DTYPES)}")
    return DTYPES[dtype]


def check(step: Callable, settings: Optional[Dict[str, object]] = None, project: Optional[Callable] = None,
          retract: Optional[Callable] = None, rgrad: Optional[Callable] = None,
          transport: Optional[Callable] = None, metric: Optional[Callable] = None, dtype: str = "float64") -> List[str]:
    """What `stiefel certify --rule` would refuse, as a list of messages (empty: nothing): the
    functions compiled with TorchScript, then two probe steps on three frames of St(5, 2) in ``dtype``
    with the given settings, as `stiefel` probes a rule at load, and one call of each component."""
    given = {"project": project, "rgrad": rgrad, "retract": retract, "transport": transport, "metric": metric}
    try:
        m = module(step, **given)
    except RuleError as e:
        return [str(e)]
    problems = []
    try:
        dt = _dtype(dtype)
    except RuleError as e:
        return [str(e)]
    gen = torch.Generator().manual_seed(20260916)
    w = torch.linalg.qr(torch.randn(3, 5, 2, generator=gen, dtype=torch.float64))[0].to(dt)
    state: List[Tensor] = []
    s = _probe_settings(settings or {})
    for t in range(2):
        g = torch.randn(3, 5, 2, generator=gen, dtype=torch.float64).to(dt)
        try:
            out = m(w, g, state, s)
        except Exception as e:
            return problems + [f"step raised on probe step {t + 1} with settings {s}: {e}"]
        nxt, state = out[0], out[1]
        if nxt.shape != w.shape:
            return problems + [f"step returned frames of shape {list(nxt.shape)} for {list(w.shape)}"]
        if nxt.dtype != dt:
            return problems + [f"step returned frames of dtype {nxt.dtype}, not {dtype}"]
        if not torch.isfinite(nxt).all():
            return problems + ["step returned frames that are not finite on a probe step"]
        if len(out) == 3 and (out[2].shape != w.shape or out[2].dtype != w.dtype):
            return problems + [f"step returned a step of {out[2].dtype} {list(out[2].shape)} for {list(w.shape)}"]
        w = nxt
    for name, fn in given.items():
        if fn is None:
            continue
        args = [w] * (len(COMPONENTS[name].split(", ")) - 1) + [torch.zeros_like(w)]
        try:
            out = getattr(m, name)(*args)
        except Exception as e:
            problems.append(f"{name}({COMPONENTS[name]}) raised: {e}")
            continue
        if name == "metric":
            if out.numel() != w.shape[0] or not out.is_floating_point():
                problems.append(f"metric(w, x, y) returned {out.dtype} {list(out.shape)}: one number per frame, "
                                f"[{w.shape[0]}]")
        elif out.shape != w.shape or out.dtype != w.dtype:
            problems.append(f"{name}({COMPONENTS[name]}) returned {out.dtype} {list(out.shape)} for {w.dtype} "
                            f"{list(w.shape)}")
    return problems


def export(step: Callable, path: str, *, name: Optional[str] = None, settings: Optional[Dict[str, object]] = None,
           properties: Iterable[str] = (), reference: Optional[str] = None, project: Optional[Callable] = None,
           retract: Optional[Callable] = None, rgrad: Optional[Callable] = None,
           transport: Optional[Callable] = None, metric: Optional[Callable] = None,
           dtype: str = "float64") -> Tuple[str, str]:
    """Writes the rule to ``path`` (TorchScript) and its --rule-config beside it (``.json``), each
    atomically; returns both paths. ``dtype`` "float32": the rule is fed and returns float32 frames,
    and is certified at float32's rounding. Raises RuleError for what `stiefel` would refuse."""
    properties = list(properties)
    unknown = [p for p in properties if p not in PROPERTIES]
    if unknown:
        raise RuleError(f"unknown properties {unknown}: a rule declares some of {list(PROPERTIES)}")
    if reference is not None and reference not in REFERENCES:
        raise RuleError(f"reference {reference!r} is not one of {list(REFERENCES)}")
    if "agrees-with-reference" in properties and reference is None:
        raise RuleError("'agrees-with-reference' needs a reference")
    given = {"project": project, "rgrad": rgrad, "retract": retract, "transport": transport, "metric": metric}
    for p in properties:
        if p in NEEDS and given[NEEDS[p]] is None:
            raise RuleError(f"'{p}' needs {NEEDS[p]}=")
    if "tangent-step" in properties and not _returns_step(_script(step, "step")):
        raise RuleError("'tangent-step' needs a step that returns (frames, state, step)")
    settings = dict(settings or {})
    for k in ("lr", "eps"):
        if k in settings:
            raise RuleError(f"settings[{k!r}]: each claim sets lr and eps")
    _dtype(dtype)
    problems = check(step, settings, dtype=dtype, **given)
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
    if dtype != "float64":
        config["dtype"] = dtype
    m = module(step, **given)
    m.save(path + ".tmp")
    os.replace(path + ".tmp", path)
    with open(config_path + ".tmp", "w") as f:
        json.dump(config, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(config_path + ".tmp", config_path)
    return path, config_path


from .optimizer import from_optimizer  # noqa: E402 (needs RuleError)


def export_optimizer(cls, path: str, *, options: Optional[Dict[str, object]] = None, name: Optional[str] = None,
                     properties: Iterable[str] = (), reference: Optional[str] = None,
                     project: Optional[Callable] = None, retract: Optional[Callable] = None,
                     rgrad: Optional[Callable] = None, transport: Optional[Callable] = None,
                     metric: Optional[Callable] = None, dtype: str = "float64") -> Tuple[str, str]:
    """Writes the rule of optimizer class ``cls`` constructed with ``options`` (lr and eps among them
    only for the probe: each claim sets them) to ``path`` and its config beside it, as ``export``;
    the config's settings are the optimizer's other float hyperparameters. Raises RuleError for what
    cannot be translated or what `stiefel` would refuse."""
    step, settings = from_optimizer(cls, **dict(options or {}))
    return export(step, path, name=name, settings=settings, properties=properties, reference=reference,
                  project=project, retract=retract, rgrad=rgrad, transport=transport, metric=metric, dtype=dtype)
