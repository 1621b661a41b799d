"""The typed training specs (workflow_src/specs.py): every field in the hash, one version in it,
a document that reads back as the spec, and a document with a wrong key refused by name."""

import argparse
import dataclasses
import json
import re
import typing

import pytest
import yaml

from tests.conftest import REPO
from workflow_src import layout, lm_specs, specs
from workflow_src.registry import Experiment
from workflow_src.specs import LMSpec, SpecError, TrainSpec

DEMO = yaml.safe_load((REPO / "config.demo.yaml").read_text())
FULL = yaml.safe_load((REPO / "config.yaml").read_text())


def examples() -> list:
    """Specs of both kinds with every nested part set: a translation model, a joint one, an AL
    language model and Figure 1's (a train slice and the convergence rule)."""
    return [
        layout.train_spec(DEMO, "iwslt16", "fr-en", "word2emb-fasttext-tied-nllvmf_reg1reg2", 1),
        layout.train_spec(DEMO, "wmt17", "de-en", "bpe32k-joint512", 1),
        lm_specs.lm_spec(FULL, "ptb", "lm-small-real@gamma=0.5", 1),
        lm_specs.lm_spec(FULL, "ptb", "lm-subspace", 1),
    ]


def changed(value, annotation):
    """A value of the field's type (`annotation`) that is not `value`."""
    if value is None:
        kind = typing.get_origin(next(a for a in typing.get_args(annotation) if a is not type(None)))
        return (8,) if kind is tuple else 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, tuple):
        return value + (99,)
    return {**value, "extra": 1.0}  # loss_params


def every_change(spec):
    """(field path, the spec with that one field changed) for every field, nested ones too."""
    hints = typing.get_type_hints(type(spec))
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if dataclasses.is_dataclass(value):
            for path, part in every_change(value):
                yield f"{f.name}.{path}", dataclasses.replace(spec, **{f.name: part})
        else:
            yield f.name, dataclasses.replace(spec, **{f.name: changed(value, hints[f.name])})


@pytest.mark.parametrize("spec", examples(), ids=lambda spec: spec.experiment)
def test_every_field_is_in_the_hash_and_the_document_reads_back_as_the_spec(spec):
    fields = json.loads(json.dumps(specs.document(spec)))
    assert fields["spec_version"] == specs.SPEC_VERSION
    assert specs.load(type(spec), fields, "test") == spec
    assert specs.spec_hash(fields) == specs.spec_hash(spec)
    for path, other in every_change(spec):
        assert specs.spec_hash(other) != specs.spec_hash(spec), path


def test_the_examples_set_every_optional_part():
    """So that every_change reaches the fields of Figure 1's train slice and convergence rule."""
    figure_1 = examples()[-1]
    assert figure_1.train_slice is not None and figure_1.convergence is not None


def test_the_version_is_in_the_hash(monkeypatch):
    spec = examples()[0]
    before = specs.spec_hash(spec)
    monkeypatch.setattr(specs, "SPEC_VERSION", specs.SPEC_VERSION + 1)
    assert specs.spec_hash(spec) != before
    assert specs.document(spec)["spec_version"] == specs.SPEC_VERSION


def test_a_document_with_a_wrong_key_or_version_is_refused_by_name():
    spec = examples()[0]
    fields = specs.document(spec)
    with pytest.raises(SpecError, match=r"^model\.pt: unknown key clipping in a TrainSpec$"):
        specs.load(TrainSpec, {**fields, "clipping": 5}, "model.pt")
    with pytest.raises(SpecError, match=r"^--spec: missing key train\.patience of a TrainSettings$"):
        specs.load(
            TrainSpec, {**fields, "train": {k: v for k, v in fields["train"].items() if k != "patience"}}, "--spec"
        )
    with pytest.raises(SpecError, match=r"^--spec: spec_version None, not 2 "):
        specs.load(TrainSpec, {k: v for k, v in fields.items() if k != "spec_version"}, "--spec")
    with pytest.raises(SpecError, match=r"^--spec: unknown key source_unit in a LMSpec$"):
        specs.load(LMSpec, fields, "--spec")  # a translation spec is not a language model's


def test_a_trainer_takes_the_document_or_a_file_and_names_the_file_in_its_errors(tmp_path):
    """`--spec JSON` or `--spec-file PATH` (the rules' spec.requested.json), one of them; a file
    that is not a spec's document is named, as --spec is."""
    parser = argparse.ArgumentParser()
    specs.add_spec_arguments(parser, TrainSpec)
    fields = specs.document(examples()[0])
    given = tmp_path / "spec.requested.json"
    given.write_text(json.dumps(fields) + "\n")
    assert specs.spec_argument(parser.parse_args(["--spec", json.dumps(fields)])) == (fields, "--spec")
    assert specs.spec_argument(parser.parse_args(["--spec-file", str(given)])) == (fields, str(given))
    assert specs.load(TrainSpec, *specs.spec_argument(parser.parse_args(["--spec-file", str(given)]))) == examples()[0]
    with pytest.raises(SystemExit):
        parser.parse_args(["--spec", "{}", "--spec-file", str(given)])
    given.write_text(json.dumps({**fields, "clipping": 5}))
    with pytest.raises(SpecError, match=rf"^{re.escape(str(given))}: unknown key clipping in a TrainSpec$"):
        specs.load(TrainSpec, *specs.spec_argument(parser.parse_args(["--spec-file", str(given)])))
    given.write_text('{"experiment": ')
    with pytest.raises(SpecError, match=rf"^{re.escape(str(given))}: not a spec's JSON document \(Expecting value"):
        specs.spec_argument(parser.parse_args(["--spec-file", str(given)]))


def test_a_translation_spec_carries_every_field_of_its_experiment():
    experiment_fields = {f.name for f in dataclasses.fields(Experiment)}
    assert experiment_fields <= {f.name for f in dataclasses.fields(TrainSpec)}
