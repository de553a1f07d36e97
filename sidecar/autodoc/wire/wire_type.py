"""How a wire object is validated, declared without importing pydantic.

Every `TypedDict` the wire sends carries pydantic's settings: no key but the declared ones, no
coercion, its attribute docstrings as the fields' descriptions. pydantic reads them only where a
value is validated (`protocol.conform`, the tests) or a schema is written (`schema_views`); a
command that only builds answers never imports it (pydantic's `with_config` sets the same
documented attribute, `__pydantic_config__`, and costs ~40 ms of import at every start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pydantic import ConfigDict

WIRE_CONFIG: ConfigDict = {"extra": "forbid", "strict": True, "use_attribute_docstrings": True}

_Type = TypeVar("_Type", bound=type)


def wire_type(cls: _Type) -> _Type:
    """Mark a TypedDict as a wire object: validated with `WIRE_CONFIG`."""
    setattr(cls, "__pydantic_config__", WIRE_CONFIG)  # noqa: B010 - what with_config sets
    return cls
