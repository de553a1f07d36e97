"""Reading a workspace's schema file (`_schema/frontmatter.yaml`, or the `schema` option) into
a `Schema`, each problem named with its line.

Apart from `frontmatter_schema` because it needs PyYAML (~20 ms to import): only a run that reads
a schema file (indexing, `check`) loads it; a search reads the stored schema as JSON.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from autodoc.parse.frontmatter_schema import (
    DEFAULT_TYPE_FIELD,
    FIELD_TYPES,
    TAG_FIELD,
    Field,
    Schema,
    SchemaError,
    canonical,
    normalise,
)

_TYPE_ALIASES = {
    "str": "string",
    "text": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list[string]": "list",
    "list of strings": "list",
    "strings": "list",
    "links": "link",
    "list of links": "link",
}
_FIELD_NAME = re.compile(r"^[A-Za-z_][\w.-]*$")


def parse_schema(text: str) -> Schema:
    """The schema in `text`; SchemaError names the line of the first problem."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        last = max(1, len(text.rstrip("\n").split("\n")))  # a mark at the end: the last line
        line = min(mark.line + 1, last) if mark else 1
        raise SchemaError(f"not valid YAML: {reason}", line) from None
    if root is None:
        return Schema()
    top = _mapping(root, "the schema")
    unknown = [k for k in top if k not in ("common", "types", "match", "type_field")]
    if unknown:
        key, _ = top[unknown[0]]
        raise SchemaError(
            f"unknown section {unknown[0]!r} (expected common, types, match, type_field)",
            _line(key),
        )
    type_field = DEFAULT_TYPE_FIELD
    if "type_field" in top:
        node = top["type_field"][1]
        type_field = _field_name(_scalar(node, "type_field"), node)
    common = _fields(top["common"][1], "common") if "common" in top else {}
    types: dict[str, dict[str, Field]] = {}
    if "types" in top:
        for name, (_key, node) in _mapping(top["types"][1], "types").items():
            types[normalise(name)] = _fields(node, f"types.{name}")
    match: dict[str, tuple[str, ...]] = {}
    if "match" in top:
        for name, (key, node) in _mapping(top["match"][1], "match").items():
            if normalise(name) not in types:
                raise SchemaError(
                    f"match names type {name!r}, which types does not declare", _line(key)
                )
            globs = _value(node)
            globs = [globs] if isinstance(globs, str) else globs
            if not isinstance(globs, list) or not all(isinstance(g, str) and g for g in globs):
                raise SchemaError(f"match.{name} must be a list of path globs", _line(node))
            match[normalise(name)] = tuple(globs)
    _check_consistent(common, types, root)
    return Schema(common, types, match, type_field)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _value(node: yaml.Node) -> Any:
    return SafeConstructor().construct_object(node, deep=True)


def _scalar(node: yaml.Node, what: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise SchemaError(f"{what} must be a single value", _line(node))
    return str(node.value)


def _mapping(node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise SchemaError(f"{what} must be a mapping", _line(node))
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key, value in node.value:
        name = _scalar(key, "a key")
        if name in out:
            raise SchemaError(f"{name!r} is declared twice in {what}", _line(key))
        out[name] = (key, value)
    return out


def _field_name(name: str, node: yaml.Node) -> str:
    if not _FIELD_NAME.match(name) or name.lower() == TAG_FIELD:
        why = "is reserved for tags" if name.lower() == TAG_FIELD else "is not a field name"
        raise SchemaError(f"{name!r} {why} (letters, digits, _ . -)", _line(node))
    return name.lower()


def _fields(node: yaml.Node, where: str) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for raw, (key, spec) in _mapping(node, where).items():
        name = _field_name(raw, key)
        fields[name] = _field(name, spec, f"{where}.{raw}")
    return fields


def _field(name: str, node: yaml.Node, where: str) -> Field:
    if isinstance(node, yaml.SequenceNode):  # a list of values is an enum
        return Field(name, "enum", _enum_values(node, where))
    if isinstance(node, yaml.ScalarNode):
        return Field(name, _type_name(node.value, node, where))
    spec = _mapping(node, where)
    unknown = [k for k in spec if k not in ("type", "values", "required")]
    if unknown:
        raise SchemaError(
            f"{where}: unknown key {unknown[0]!r} (type, values, required)",
            _line(spec[unknown[0]][0]),
        )
    if "type" not in spec and "values" not in spec:
        raise SchemaError(f"{where} needs a type", _line(node))
    kind = (
        _type_name(_scalar(spec["type"][1], "type"), spec["type"][1], where)
        if ("type" in spec)
        else "enum"
    )
    values: tuple[str, ...] = ()
    if "values" in spec:
        if kind != "enum":
            raise SchemaError(
                f"{where}: values are for an enum, not a {kind}", _line(spec["values"][0])
            )
        values = _enum_values(spec["values"][1], where)
    elif kind == "enum":
        raise SchemaError(f"{where}: an enum needs values", _line(node))
    required = False
    if "required" in spec:
        required = _value(spec["required"][1])
        if not isinstance(required, bool):
            raise SchemaError(f"{where}.required must be true or false", _line(spec["required"][1]))
    return Field(name, kind, values, required)


def _type_name(raw: str, node: yaml.Node, where: str) -> str:
    kind = _TYPE_ALIASES.get(raw.strip().lower(), raw.strip().lower())
    if kind not in FIELD_TYPES:
        raise SchemaError(
            f"{where}: unknown type {raw!r} (one of {', '.join(FIELD_TYPES)})", _line(node)
        )
    return kind


def _enum_values(node: yaml.Node, where: str) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise SchemaError(f"{where}: values must be a non-empty list", _line(node))
    values = []
    for item in node.value:
        value = canonical(_value(item))
        if value is None:
            raise SchemaError(f"{where}: enum values must be plain values", _line(item))
        values.append(value)
    return tuple(dict.fromkeys(values))


def _check_consistent(common: dict[str, Field], types: dict[str, dict[str, Field]], root) -> None:
    """One field name means one kind of value, so a filter on it coerces one way."""
    seen: dict[str, tuple[str, str]] = {n: (f.type, "common") for n, f in common.items()}
    for tname, fields in types.items():
        for n, f in fields.items():
            if n in seen and seen[n][0] != f.type:
                raise SchemaError(
                    f"field {n!r} is a {f.type} in types.{tname} but a {seen[n][0]} in "
                    f"{seen[n][1]}",
                    _line(root),
                )
            seen.setdefault(n, (f.type, f"types.{tname}"))
