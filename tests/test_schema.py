"""The spec format's JSON Schema (``hierfair schema``): valid, accepts every
shipped spec, and rejects the shape errors validate rejects."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from hierfair.cli import main
from hierfair.experiment.schema import spec_schema

from .conftest import EXPERIMENTS, spec_with
from .test_cli_errors import CASES

VALIDATOR = jsonschema.Draft202012Validator(spec_schema())
SHIPPED = sorted([*EXPERIMENTS.glob("*.yaml"), *EXPERIMENTS.glob("counterexamples/*.yaml")])


def test_the_schema_is_a_valid_json_schema(capsys):
    jsonschema.Draft202012Validator.check_schema(spec_schema())
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == spec_schema()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_spec_fits_the_schema(path):
    errors = list(VALIDATOR.iter_errors(yaml.safe_load(path.read_text())))
    assert not errors, [(list(e.absolute_path), e.message) for e in errors]


# what the schema can see without the data (queues, fits and files need validate)
SHAPE_ERRORS = ["unknown top-level key", "unknown nested key", "unknown algorithm",
                "unknown algorithm param", "negative demand", "missing demand", "negative weight",
                "unknown workload kind", "unknown workload option", "bad full-binary levels"]


@pytest.mark.parametrize("case", SHAPE_ERRORS)
def test_the_schema_rejects_what_validate_rejects_by_shape(case):
    data, _field, _detail = CASES[case]
    assert not VALIDATOR.is_valid(data), case


def test_a_users_policy_fits_the_schema():
    assert VALIDATOR.is_valid(spec_with(algorithms=[
        "my_policies:WeightedRoundRobin", "slots-12",
        {"name": "my_policies:WeightedRoundRobin", "params": {"q": 1}, "label": "wrr"},
        {"name": "pdrf", "params": {"alpha": 3}}]))
    assert not VALIDATOR.is_valid(spec_with(algorithms=[{"name": "pdrf",
                                                         "params": {"alpa": 3}}]))
