"""The config against its JSON schema, with one short message per problem.

Snakemake's own `validate` prints the whole schema after the error; this names, on one line per
problem, where the setting came from (the config file, or `--config`), the key, the value and what
was expected, and nothing else: every problem, and no traceback.

`--config` values come as strings below the top level (`--config 'train={patience: 5}'` gives
train.patience the string '5': Snakemake reads nested values with YAML's base loader). Before
validation each such string is read as the type the schema gives its key, where the schema gives
one that is not a string and the string is a clean literal of it (`5`, `0.5`, `true`, `null`,
`[1, 2]`, `{a: 1}`); anything else is left for the check to name.

Past the schema, also one line each: an artefact a paper does not have (`papers.tying.table9`) or
a row its table has not, and an external tool the config names that is not there (`TOOLS`:
`align.fast_align`, `scoring.meteor_jar`), so that the dry run says so, not the job hours later.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jsonschema

try:
    import yaml
except ImportError:  # a bare GPU machine, which reads the JSON `read_checked` describes
    yaml = None

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    pass


# -- --config strings read as the schema's types ---------------------------------------------------
def _resolve(schema: dict, root: dict) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def _branches(schema, root: dict) -> list[dict]:
    """The alternatives a value at `schema` may match (oneOf / anyOf / allOf and if-then-else
    flattened: a superset, which is all the reading of a string needs)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return []
    options = [option for key in ("oneOf", "anyOf", "allOf") for option in schema.get(key, ())]
    options += [schema[key] for key in ("then", "else") if key in schema]
    nested = [branch for option in options for branch in _branches(option, root)]
    combinators = ("oneOf", "anyOf", "allOf", "if", "then", "else", "description", "title")
    own = {k: v for k, v in schema.items() if k not in combinators}
    return nested + ([own] if own or not nested else [])


def _json_type(value) -> str:
    for kind, types in (
        ("boolean", bool),
        ("integer", int),
        ("number", float),
        ("string", str),
        ("null", type(None)),
        ("array", list),
        ("object", dict),
    ):
        if isinstance(value, types):
            return kind
    return "unknown"


def _types(branches: list[dict]) -> set[str] | None:
    """The JSON types the branches allow; None where one allows anything."""
    found = set()
    for branch in branches:
        if "type" in branch:
            found |= {branch["type"]} if isinstance(branch["type"], str) else set(branch["type"])
        elif "enum" in branch or "const" in branch:
            found |= {_json_type(v) for v in branch.get("enum", [branch.get("const")])}
        elif {"properties", "patternProperties", "additionalProperties"} & set(branch):
            found.add("object")
        elif "items" in branch:
            found.add("array")
        else:
            return None
    return found


def _takes_string(branches: list[dict], value: str) -> bool:
    """Whether a branch takes `value` as the string it is (a string type, or one of its enum)."""
    for branch in branches:
        kinds = branch.get("type", ())
        if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
            return True
        if value in branch.get("enum", ()) or ("const" in branch and branch["const"] == value):
            return True
    return False


def _literal(text: str, kind: str):
    """`text` read as a clean literal of the JSON type `kind`, or ValueError."""
    stripped = text.strip()
    if kind == "null" and stripped in ("null", "Null", "NULL", "~"):
        return None
    if kind == "boolean" and stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    if kind in ("integer", "number") and re.fullmatch(r"[+-]?[0-9]+", stripped):
        return int(stripped)
    if kind == "number" and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", stripped):
        value = float(stripped)
        if math.isfinite(value):
            return value
    if (kind, stripped[:1]) in (("array", "["), ("object", "{")):
        value = yaml.safe_load(stripped)
        if _json_type(value) == kind:
            return value
    raise ValueError(text)


def _coerced(value, schema, root: dict):
    """`value` (from --config) with its strings read as the types `schema` gives them."""
    branches = _branches(schema, root)
    if isinstance(value, str):
        types = _types(branches)
        if not types or _takes_string(branches, value):
            return value
        for kind in ("null", "boolean", "integer", "number", "array", "object"):
            if kind in types:
                try:
                    value = _literal(value, kind)
                    break
                except (ValueError, yaml.YAMLError):
                    continue
        else:
            return value
    if isinstance(value, list):
        items = [b["items"] for b in branches if "items" in b and _json_type(value) in (_types([b]) or {"array"})]
        return [_coerced(item, {"anyOf": items}, root) if items else item for item in value]
    if isinstance(value, dict):
        return {key: _coerced(item, _member(branches, key), root) for key, item in value.items()}
    return value


def _member(branches: list[dict], key: str) -> dict:
    """The schema of `key` in an object matching one of `branches` (anyOf the candidates)."""
    found = []
    for branch in branches:
        if key in branch.get("properties", {}):
            found.append(branch["properties"][key])
            continue
        matched = [sub for pattern, sub in branch.get("patternProperties", {}).items() if re.search(pattern, key)]
        if matched:
            found += matched
        elif isinstance(branch.get("additionalProperties"), dict):
            found.append(branch["additionalProperties"])
    return {"anyOf": found} if found else {}


def coerce(config: dict, overrides: dict, schema: dict) -> None:
    """Read the `--config` strings in `config` (in place) as the schema's types: only the paths
    `overrides` (the --config settings) set, only where the schema says the type."""

    def walk(merged: dict, given: dict, branches: list[dict]) -> None:
        for key, value in given.items():
            if key not in merged:
                continue
            member = _member(branches, key)
            if isinstance(value, dict) and isinstance(merged[key], dict):
                walk(merged[key], value, _branches(member, schema))
            else:
                merged[key] = _coerced(merged[key], member, schema)

    walk(config, overrides, _branches(schema, schema))


def key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "(top level)"


def unexpected_keys(error: jsonschema.ValidationError) -> list[str]:
    """The keys an additionalProperties error is about: neither a property of the schema nor
    matching one of its patternProperties (those are as allowed as the named ones)."""
    if not isinstance(error.instance, dict):
        return []
    named, patterns = error.schema.get("properties", {}), error.schema.get("patternProperties", {})
    return sorted(
        (
            key
            for key in error.instance
            if key not in named and not any(re.search(pattern, str(key)) for pattern in patterns)
        ),
        key=str,
    )


def expected(error: jsonschema.ValidationError) -> str:
    """What the schema wanted where `error` happened, in a few words."""
    schema, validator = error.schema, error.validator
    if validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {})) + [
            f"a key matching {p}" for p in schema.get("patternProperties", {})
        ]
        return f"unexpected key {', '.join(map(repr, unexpected_keys(error)))}" + (
            f"; allowed: {', '.join(allowed)}" if allowed else ""
        )
    if validator == "required":
        return error.message.replace("is a required property", "is required")
    if validator == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(repr, schema['enum']))}"
    if validator == "oneOf" and all(set(option) == {"required"} for option in error.validator_value):
        keys = [option["required"][0] for option in error.validator_value]
        return f"needs exactly one of {', '.join(keys)}"
    if validator in ("type", "pattern", "minimum", "maximum", "exclusiveMinimum", "minItems", "minLength", "const"):
        return f"{error.instance!r}: expected {validator} {error.validator_value!r}"
    return error.message


def _located(config: dict, schema: dict) -> list[tuple[tuple, str]]:
    """(the key's path, "key: what was expected") per problem, most specific first."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=jsonschema.exceptions.relevance)
    found = []
    for error in errors:
        leaf = jsonschema.exceptions.best_match([error])
        path = tuple(leaf.absolute_path)
        if leaf.validator == "additionalProperties":
            path += tuple(unexpected_keys(leaf))[:1]
        found.append((path, f"{key_path(leaf)}: {expected(leaf)}{hint(leaf)}"))
    return found


def hint(error: jsonschema.ValidationError) -> str:
    """How to write a `--config` value whose type the command line got wrong."""
    if error.validator != "type" or not isinstance(error.instance, str):
        return ""
    if tuple(error.absolute_path) == ("papers",):
        return f"; to run some papers, give a list: --config papers=[{error.instance}]"
    if error.validator_value == "array":
        return "; a list is written [a, b]"
    if error.validator_value == "object":
        return "; a mapping is written {key: value}"
    return ""


# -- what the schema cannot say: the registry's artefacts and rows, the external tools ---------------
def _selection_problems(config: dict) -> list[tuple[tuple, str]]:
    """(path, line) of each artefact of `papers` that its paper does not have, or whose `rows` name
    a row it has not (`layout.selection_problem`)."""
    from workflow_src import layout  # the registry of every paper: only once the schema has passed

    return [
        (("papers", paper, artefact_id), problem)
        for paper, artefacts in config["papers"].items()
        for artefact_id, settings in artefacts.items()
        if (problem := layout.selection_problem(paper, artefact_id, settings))
    ]


def _not_executable(value: str) -> str | None:
    if shutil.which(value) is None:  # a path, or a name on the PATH, as subprocess runs it
        return "is neither an executable file nor a command on the PATH"
    return None


def _not_a_jar_java_runs(value: str) -> str | None:
    if not Path(value).is_file():
        return "is not a file"
    return None if shutil.which("java") else "needs java, which is not on the PATH"


# key -> (what is wrong with its value, or None; what was expected): checked when the DAG is built,
# not when the job that needs the tool fails hours later
TOOLS = {
    ("align", "fast_align"): (_not_executable, "a fast_align binary, or null for eflomal"),
    ("scoring", "meteor_jar"): (_not_a_jar_java_runs, "meteor-1.5.jar and java, or null for nltk's METEOR"),
}


def _tool_problems(config: dict) -> list[tuple[tuple, str]]:
    """(path, line) of each external tool the config names that is not there, and of each directory
    of `download.local_copies` that is not one (a mistyped one would silently download instead)."""
    found = []
    for path, (fault, what) in TOOLS.items():
        value = config[path[0]][path[1]]
        if value is not None and (why := fault(value)):
            found.append((path, f"{'.'.join(path)}: {value!r} {why}; expected {what}"))
    for k, directory in enumerate(config["download"].get("local_copies") or ()):
        if not Path(directory).is_dir():
            found.append(
                (("download", "local_copies", k), f"download.local_copies: {directory!r} is not a directory here")
            )
    return found


def problems(config: dict, schema: dict) -> list[str]:
    """One line per problem, most specific first."""
    return [line for _, line in _located(config, schema)]


def _given(overrides: dict, path: tuple) -> bool:
    """Whether `--config` set the value at `path` (or a mapping above it)."""
    node = overrides
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if not isinstance(node, dict):
            return True
    return True


def _origin(path: tuple, configfiles: list, overrides: dict) -> str:
    """Where the setting at `path` came from: --config, or the last config file that sets it."""
    if path and _given(overrides, path):
        return "--config"
    for configfile in reversed(configfiles):
        node = yaml.safe_load(Path(configfile).read_text()) or {}
        for part in path[:1]:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None or not path:
            return str(configfile)
    return str(configfiles[-1]) if configfiles else "config"


def validate(
    config: dict, schema: dict, configfiles: list = (), overrides: dict | None = None, tools: bool = True
) -> None:
    """Coerce the `--config` strings (`overrides`: the --config settings) and check the config:
    ConfigError with one line per problem, each naming its config file (or --config) and key; with
    `tools`, also each external tool it names that is not on this machine."""
    overrides = _plain(overrides or {})
    coerce(config, overrides, schema)
    found = _located(config, schema) or _selection_problems(config) + (_tool_problems(config) if tools else [])
    if found:
        raise ConfigError("\n".join(f"{_origin(path, list(configfiles), overrides)}: {line}" for path, line in found))


def _plain(value):
    """Snakemake's immutable maps as dicts."""
    if hasattr(value, "items"):
        return {key: _plain(item) for key, item in value.items()}
    return value


def running_workflow():
    """The Snakemake workflow whose Snakefile is being read, if any (Snakemake keeps it in the
    globals of its `snakemake.workflow` module, which the Snakefile runs in)."""
    try:
        import snakemake.workflow
    except ImportError:
        return None
    return getattr(snakemake.workflow, "workflow", None)


def check(config: dict, schema_path: str | Path) -> None:
    """The Snakefile's check: the config files and --config settings are read from the running
    workflow. Problems end Snakemake with their lines and no traceback (SystemExit: an exception
    raised here would gain two lines of traceback through the Snakefile); outside Snakemake
    they raise ConfigError."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    workflow = running_workflow()
    if workflow is None:
        validate(config, schema)
        return
    try:
        validate(config, schema, [str(path) for path in workflow.configfiles], workflow.config_settings.config)
    except ConfigError as err:
        raise SystemExit(f"config error:\n{err}") from None


def read_checked(value: str) -> dict:
    """A config given on a command line (`atomic.read_config`: a JSON object, or a JSON or YAML file),
    checked as the Snakefile checks it: problems end the command with one line each, naming the file
    and key (not the external tools it names: the jobs that run them check those). Where jsonschema
    4 or PyYAML is missing (a bare GPU machine) it is read unchecked: the JSON it takes there is what
    `gpu_check export-config` checked and wrote where the workflow's environment is."""
    from workflow_src.atomic import read_config

    try:
        config = read_config(value)
    except (OSError, ValueError, *((yaml.YAMLError,) if yaml else ())) as error:
        raise SystemExit(f"config error: {value}: {error}") from None
    try:
        from jsonschema import Draft202012Validator  # noqa: F401  (an older jsonschema cannot read the schema)
    except ImportError:
        return config
    if yaml is None:
        return config
    try:
        validate(
            config, yaml.safe_load(SCHEMA.read_text()), [] if value.lstrip().startswith("{") else [value], tools=False
        )
    except ConfigError as err:
        raise SystemExit(f"config error:\n{err}") from None
    return config


def select_papers(names: list, configfiles: list) -> dict:
    """The `papers` settings of the named papers, read from the last config file that has them
    (`--config papers=[...]` replaced the block with the list of names)."""
    blocks = [yaml.safe_load(Path(path).read_text()).get("papers") for path in configfiles]
    papers = next((block for block in reversed(blocks) if isinstance(block, dict)), None)
    if papers is None:
        raise ConfigError(
            f"config: papers: a list of paper names needs a config file whose `papers` block sets them "
            f"(read: {', '.join(map(str, configfiles))})"
        )
    unknown = [name for name in names if name not in papers]
    if unknown:
        raise ConfigError(
            f"config: papers: {', '.join(map(str, unknown))} not configured (configured: {', '.join(papers)})"
        )
    return {name: papers[name] for name in names}
