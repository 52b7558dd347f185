"""Algorithm families, one module each, installed as ``hierfair.algorithms``.

:data:`ALGORITHMS` maps the name used in specs and on the command line to the
policy class.  Each class carries a one-line ``description`` and a pydantic
``Params`` model that validates the ``params:`` a spec gives it.

A spec may also name a policy class of its own (docs/extending.md): as
``package.module:ClassName`` (importable: installed, or on ``PYTHONPATH``), or
by the name an installed package registers in the ``hierfair.algorithms``
entry-point group.  :func:`policy_class` resolves all three.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import sysconfig
from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, get_args, get_origin

from pydantic import ValidationError

from hierfair.algorithms.capacity import CapacityCurrent, NaiveHDRF
from hierfair.algorithms.collapsed import Collapsed, CollapsedCPU, CollapsedMem
from hierfair.algorithms.dff import DFF
from hierfair.algorithms.drf import WeightedDRF
from hierfair.algorithms.drfh import DRFH
from hierfair.algorithms.fifo import FIFO
from hierfair.algorithms.hdrf import (
    DynamicHDRF,
    PreemptiveHDRF,
    RescaleOnlyHDRF,
    StaticHDRF,
)
from hierfair.algorithms.hdrf_fast import FastHDRF
from hierfair.algorithms.kueue import Kueue
from hierfair.algorithms.mch import MCH
from hierfair.algorithms.mesos_drf import MesosDRF
from hierfair.algorithms.pdrf import PDRF
from hierfair.algorithms.per_server import PerServerDRF
from hierfair.algorithms.psdsf import PSDSF
from hierfair.algorithms.slots import Slots
from hierfair.algorithms.tsf import TSF
from hierfair.algorithms.volcano import VolcanoDRF
from hierfair.algorithms.volcano_capacity import VolcanoCapacity
from hierfair.algorithms.yarn_fair import YarnFair
from hierfair.algorithms.yunikorn_fair import YuniKornFair
from hierfair.errors import SpecError, did_you_mean, from_pydantic
from hierfair.sim.policy import BasePolicy

ALGORITHMS: Mapping[str, type[BasePolicy]] = {
    cls.name: cls
    for cls in (
        FIFO,
        WeightedDRF,
        StaticHDRF,
        DynamicHDRF,
        FastHDRF,
        RescaleOnlyHDRF,
        PreemptiveHDRF,
        NaiveHDRF,
        CapacityCurrent,
        Collapsed,
        CollapsedCPU,
        CollapsedMem,
        MCH,
        DFF,
        Slots,
        PDRF,
        DRFH,
        TSF,
        PerServerDRF,
        PSDSF,
        # the production schedulers as their code behaves (issue 29)
        Kueue,
        VolcanoDRF,
        VolcanoCapacity,
        YarnFair,
        MesosDRF,
        YuniKornFair,
    )
}

#: ``slots-4`` is ``slots-k`` with ``k: 4``.
_SLOTS_ALIAS = re.compile(r"^slots-(\d+)$")


#: Installed packages register their policies here (``pyproject.toml``:
#: ``[project.entry-points."hierfair.algorithms"] my-policy = "mypkg.mod:MyPolicy"``).
ENTRY_POINT_GROUP = "hierfair.algorithms"


def plugins() -> dict[str, str]:
    """Entry-point name -> ``module:Class`` of every installed plugin policy."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)
            if ep.name not in ALGORITHMS}


def available() -> dict[str, type[BasePolicy]]:
    """Built-in and plugin policies by name (a plugin that fails to load is left out)."""
    out = dict(ALGORITHMS)
    for name, target in plugins().items():
        try:
            out[name] = _import_policy(target, name)
        except SpecError:
            continue
    return out


def policy_class(name: str) -> type[BasePolicy]:
    """The class a spec's algorithm ``name`` means: built-in, plugin, or
    ``module:Class``.  Unknown or broken names raise :class:`SpecError`."""
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    found = plugins()
    if name in found:
        return _import_policy(found[name], name)
    if ":" in name:
        return _import_policy(name, name)
    known = sorted([*ALGORITHMS, *found])
    raise SpecError(f"unknown algorithm;{did_you_mean(name, known)} known: {', '.join(known)} (or "
                    "package.module:Class, docs/extending.md)", where="algorithm", value=name)


def _import_policy(target: str, name: str) -> type[BasePolicy]:
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # ImportError, AttributeError, or the module's own error
        raise SpecError(f"cannot load policy {target!r}: {type(exc).__name__}: {exc}",
                        where="algorithm", value=name) from None
    if not (isinstance(obj, type) and issubclass(obj, BasePolicy)):
        raise SpecError(f"{target!r} is not a policy class (subclass "
                        "hierfair.sim.policy.BasePolicy; docs/extending.md)",
                        where="algorithm", value=name)
    return obj


def policy_code(name: str) -> str:
    """A digest of a non-built-in policy's source file ('' for built-ins,
    which hierfair's own code version covers): a cached run of a user's
    policy reruns when its code changes."""
    alias = _SLOTS_ALIAS.match(name)
    if alias or name in ALGORITHMS:
        return ""
    cls = policy_class(name)
    h = hashlib.sha256(cls.__qualname__.encode())
    for module in _user_code(sys.modules[cls.__module__]):
        try:
            h.update(module.__name__.encode() + b"\0" + Path(module.__file__).read_bytes())
        except (OSError, TypeError):
            h.update(module.__name__.encode())
    return h.hexdigest()[:16]


def _user_code(module: ModuleType) -> list[ModuleType]:
    """The policy's module and every module of the user's own it uses, found
    by following its globals (imported modules, and the modules of imported
    names) -- not the standard library, installed packages or hierfair,
    whose versions the code version covers.  Sorted by name: the same code
    gives the same digest whatever else the process imported."""
    found: dict[str, ModuleType] = {}
    todo = [module]
    while todo:
        mod = todo.pop()
        if mod.__name__ in found or not _is_user_module(mod):
            continue
        found[mod.__name__] = mod
        for value in vars(mod).values():
            used = value if isinstance(value, ModuleType) else \
                sys.modules.get(getattr(value, "__module__", None) or "")
            if used is not None:
                todo.append(used)
    return [found[k] for k in sorted(found)]


def _is_user_module(mod: ModuleType) -> bool:
    file = getattr(mod, "__file__", None)
    if not file or mod.__name__.split(".")[0] == "hierfair":
        return False
    path = Path(file).resolve()
    installed = {Path(sysconfig.get_paths()[k]).resolve()
                 for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return not any(path.is_relative_to(root) for root in installed)


def params_of(cls: type[BasePolicy]) -> list[tuple[str, str, str]]:
    """(name, type, default) of every parameter a policy takes."""
    out = []
    for field, info in cls.Params.model_fields.items():
        ann = info.annotation
        if get_origin(ann) is Literal:
            kind = " | ".join(repr(a) for a in get_args(ann))
        else:
            kind = getattr(ann, "__name__", None) or str(ann).replace("typing.", "")
        default = "required" if info.is_required() else repr(info.get_default(
            call_default_factory=True))
        out.append((field, kind, default))
    return out


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> BasePolicy:
    """A fresh policy instance; bad names or params raise :class:`SpecError`."""
    alias = _SLOTS_ALIAS.match(name)
    if alias:
        name, params = Slots.name, {"k": int(alias.group(1)), **dict(params or {})}
    cls = policy_class(name)
    try:
        return cls(cls.Params(**dict(params or {})))
    except ValidationError as exc:
        raise from_pydantic(exc, prefix="params", model=cls.Params) from None
