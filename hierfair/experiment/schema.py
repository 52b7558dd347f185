"""A JSON Schema of the spec format, for editors (completion, hover, red
squiggles) -- ``hierfair schema`` prints it; docs/spec.md says how to use it.

It is composed from the same pydantic models that validate specs: the
top-level :class:`~hierfair.experiment.spec.Spec`, every cluster, hierarchy
and workload kind's ``Params`` (told apart by ``kind``), and every
algorithm's ``Params`` (told apart by ``name``).  It describes shapes and
types; what needs the data (a queue that is a leaf, a task that fits on a
server, a trace file that exists) only ``hierfair validate`` can check.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

SCHEMA_ID = "https://hierfair.invalid/spec.schema.json"  # a name, never fetched


def spec_schema() -> dict[str, Any]:
    from hierfair.algorithms import ALGORITHMS
    from hierfair.datasets import CLUSTER_KINDS, HIERARCHY_KINDS, WORKLOAD_KINDS
    from hierfair.datasets.arrivals import Arrivals
    from hierfair.datasets.extra_demands import ExtraDemand
    from hierfair.datasets.tree import NodeSpec
    from hierfair.experiment.spec import ClusterSpec, Spec
    from hierfair.sim.placement_rules import PLACEMENTS
    from hierfair.sim.policy import BasePolicy

    defs: dict[str, Any] = {}
    top = _inline(Spec, "", defs)
    props = top["properties"]
    props["cluster"] = {"description": "servers written out, or a cluster kind",
                        "anyOf": [_inline(ClusterSpec, "cluster-", defs),
                                  *(_kind(k, "cluster-", defs) for k in CLUSTER_KINDS.values())]}
    props["hierarchy"] = {
        "description": "a nested mapping of nodes (name -> {weight?, children?}), or a kind",
        "anyOf": [*(_kind(k, "hierarchy-", defs) for k in HIERARCHY_KINDS.values()
                    if k.name != "tree"),
                  {"type": "object", "not": {"required": ["kind"],
                                             "properties": {"kind": {"type": "string"}}},
                   "additionalProperties": _inline(NodeSpec, "node-", defs)}]}
    arrivals = _inline(Arrivals, "arrivals-", defs)
    extra = _inline(ExtraDemand, "extra-", defs)
    workloads = []
    for k in WORKLOAD_KINDS.values():
        one = _kind(k, "workload-", defs, optional_kind=k.name == "jobs")
        one["properties"]["arrivals"] = arrivals
        one["properties"]["extra_demands"] = {"type": "array", "items": extra}
        workloads.append(one)
    props["workload"] = {"description": "a job list, a trace, or a generator (by kind)",
                         "anyOf": workloads}
    algos: list[dict[str, Any]] = [
        {"enum": sorted(ALGORITHMS), "description": "a built-in algorithm"},
        {"type": "string", "pattern": r"^slots-\d+$", "description": "slots-k with k slots"},
        {"type": "string", "pattern": r"^[\w.]+:[\w.]+$",
         "description": "your own policy, module:Class (docs/extending.md)"}]
    placement = {"enum": list(PLACEMENTS), "description": "this entry's placement rule"}
    for name, cls in ALGORITHMS.items():
        # a policy that names its servers or places with its own index takes none
        own = cls.places_tasks or cls.make_index is not BasePolicy.make_index
        algos.append({"type": "object", "additionalProperties": False, "required": ["name"],
                      "description": cls.description,
                      "properties": {"name": {"const": name},
                                     "params": _inline(cls.Params, f"{name}-", defs),
                                     "label": {"type": "string"},
                                     **({} if own else {"placement": placement})}})
    algos.append({"type": "object", "additionalProperties": False, "required": ["name"],
                  "description": "a plugin or module:Class policy: its params are its own",
                  "properties": {"name": {"type": "string", "not": {"enum": sorted(ALGORITHMS)}},
                                 "params": {"type": "object"}, "label": {"type": "string"},
                                 "placement": placement}})
    props["algorithms"] = {"type": "array", "minItems": 1, "items": {"anyOf": algos}}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **top, "title": "hierfair experiment spec",
            "$defs": {**top.get("$defs", {}), **defs}}


def _kind(kind: Any, prefix: str, defs: dict[str, Any], optional_kind: bool = False,
          ) -> dict[str, Any]:
    one = _inline(kind.Params, f"{prefix}{kind.name}-", defs)
    one["description"] = kind.description
    one.setdefault("properties", {})["kind"] = {"const": kind.name}
    required = [r for r in one.get("required", []) if r != "kind"]
    one["required"] = required if optional_kind else ["kind", *required]
    return one


def _inline(model: type[BaseModel], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """``model``'s schema with its ``$defs`` moved into ``defs`` under
    ``prefix`` (two models' nested classes may share a name)."""
    schema = model.model_json_schema()
    own = schema.pop("$defs", {})
    text = json.dumps(schema)
    for name in own:
        text = text.replace(f'"#/$defs/{name}"', f'"#/$defs/{prefix}{name}"')
    for name, sub in own.items():
        sub_text = json.dumps(sub)
        for other in own:
            sub_text = sub_text.replace(f'"#/$defs/{other}"', f'"#/$defs/{prefix}{other}"')
        defs[f"{prefix}{name}"] = json.loads(sub_text)
    return json.loads(text)
