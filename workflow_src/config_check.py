"""The config against its JSON schema, with one short message per problem.

Snakemake's own `validate` prints the whole schema after the error; this names the key, the
value and what was expected, on one line, and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


class ConfigError(ValueError):
    pass


def key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "(top level)"


def expected(error: jsonschema.ValidationError) -> str:
    """What the schema wanted where `error` happened, in a few words."""
    schema, validator = error.schema, error.validator
    if validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        unexpected = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        return f"unexpected key {', '.join(map(repr, unexpected))}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
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


def problems(config: dict, schema: dict) -> list[str]:
    """One line per problem, most specific first."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=jsonschema.exceptions.relevance)
    lines = []
    for error in errors:
        leaf = jsonschema.exceptions.best_match([error])
        lines.append(f"{key_path(leaf)}: {expected(leaf)}")
    return lines


def check(config: dict, schema_path: str | Path) -> None:
    schema = yaml.safe_load(Path(schema_path).read_text())
    found = problems(config, schema)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ConfigError(f"config: {found[0]}{more}")


def select_papers(names: list, configfiles: list) -> dict:
    """The `papers` settings of the named papers, read from the last config file that has them
    (`--config papers=[...]` replaced the block with the list of names)."""
    blocks = [yaml.safe_load(Path(path).read_text()).get("papers") for path in configfiles]
    papers = next((block for block in reversed(blocks) if isinstance(block, dict)), None)
    if papers is None:
        raise ConfigError("config: papers: a list of paper names needs a config file whose `papers` block sets them")
    unknown = [name for name in names if name not in papers]
    if unknown:
        raise ConfigError(f"config: papers: {', '.join(map(str, unknown))} not configured (configured: {', '.join(papers)})")
    return {name: papers[name] for name in names}
