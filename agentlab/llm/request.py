"""What `agentlab serve` reads: a Messages API request body, checked field by field, and what it asks.

A class's scripts send all sorts of bodies, and each malformed one must get a 400 that names
the field, as the API's own `invalid_request_error` does ("tools.0.name: ..."), never a 500
from inside the simulator, nor a dropped connection. `problem(body)` walks the body in the
API's order and says what the first wrong field is; a body it passes is one the simulator
can answer (`to_request` turns it into the simulator's arguments, `simulator_profile` says which
profile answers a model name). Fields the simulator does not read (temperature, metadata,
tool_choice...) pass as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentlab.llm.base import Tool
from agentlab.llm.cache import LIFETIMES
from agentlab.llm.simulated import PROFILES

ROLES = ("user", "assistant")


def simulator_profile(model: str) -> str:
    """The simulator profile that answers for `model` (see the module docstring)."""
    if model in PROFILES:
        return model
    return "sim-small" if any(word in model.lower() for word in ("haiku", "small")) else "sim-large"


def to_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages API request body as `SimulatedLLM.complete`'s arguments (its model a profile)."""
    system = body.get("system") or ""
    system = "\n".join(b.get("text", "") for b in system) if isinstance(system, list) else system  # blocks
    fmt, tools = (body.get("output_config") or {}).get("format") or {}, body.get("tools", [])
    return {
        "system": system,
        "messages": body["messages"],
        "tools": [Tool(t["name"], t.get("description", ""), t.get("input_schema", {})) for t in tools],
        "schema": fmt.get("schema") if fmt.get("type") == "json_schema" else None,
        "model": simulator_profile(body["model"]),
        "max_tokens": body["max_tokens"],
    }


def summary(body: Any, headers: Mapping[str, str]) -> str:
    """A few words on a request for the log: model (and profile), messages, tools, schema, retry."""
    if not isinstance(body, dict):
        return ""
    model, messages, tools = str(body.get("model", "?")), body.get("messages"), body.get("tools")
    parts = [f"{model} as {simulator_profile(model)}"]  # (a malformed body is summarised too)
    parts += [f"{len(messages)} messages"] if isinstance(messages, list) else []
    parts += [f"{len(tools)} tools"] if isinstance(tools, list) and tools else []
    if isinstance(body.get("output_config"), dict) and body["output_config"].get("format"):
        parts.append("a JSON schema")
    if headers.get("x-stainless-retry-count", "0") not in ("", "0"):
        parts.append(f"retry {headers['x-stainless-retry-count']}")
    return ", ".join(parts)


def problem(body: Any) -> str:
    """The first thing wrong with a request body, as "field: what it must be"; "" if none."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"].strip():
        return "model: a model name (a non-empty string) is required"
    if type(body.get("max_tokens")) is not int or body["max_tokens"] < 1:
        return "max_tokens: a whole number >= 1 is required"
    if "stream" in body and not isinstance(body["stream"], bool):
        return "stream: must be true or false"
    checks = (
        ("system", _system),
        ("tools", _tools),
        ("output_config", _output_config),
        ("cache_control", _cache_control),
    )
    for field, check in checks:
        if field in body and body[field] is not None and (said := check(body[field], field)):
            return said
    return _messages(body.get("messages"))


def _system(value: Any, where: str) -> str:
    if isinstance(value, str):
        return ""
    if not isinstance(value, list):
        return f"{where}: must be a string or a list of text blocks"
    for i, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type", "text") != "text":
            return f"{where}.{i}: must be a text block ({{'type': 'text', 'text': ...}})"
        if said := _text(block, f"{where}.{i}") or _marker(block, f"{where}.{i}"):
            return said
    return ""


def _tools(value: Any, where: str) -> str:
    if not isinstance(value, list):
        return f"{where}: must be a list of tools"
    for i, tool in enumerate(value):
        at = f"{where}.{i}"
        if not isinstance(tool, dict):
            return f"{at}: must be an object with a name, a description and an input_schema"
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            return f"{at}.name: a tool's name (a non-empty string) is required"
        if not isinstance(tool.get("description", ""), str):
            return f"{at}.description: must be a string"
        if not isinstance(tool.get("input_schema", {}), dict):
            return f"{at}.input_schema: must be a JSON Schema object"
        if said := _marker(tool, at):
            return said
    return ""


def _output_config(value: Any, where: str) -> str:
    if not isinstance(value, dict):
        return f"{where}: must be an object"
    fmt = value.get("format")
    if fmt is not None:
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
            return f"{where}.format: must be {{'type': 'json_schema', 'schema': {{...}}}}"
        if not isinstance(fmt.get("schema"), dict):
            return f"{where}.format.schema: must be a JSON Schema object"
        if said := _schema(fmt["schema"], f"{where}.format.schema"):
            return said
    if not isinstance(value.get("effort", ""), str | type(None)):
        return f"{where}.effort: must be a string such as 'low'"
    return ""


_SCHEMAS = ("items", "additionalProperties", "not")  # keywords whose value is one schema
_SCHEMA_MAPS = ("properties", "$defs", "definitions")  # name -> schema
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


def _schema(schema: dict, where: str) -> str:
    """The first keyword of a JSON Schema that is not of JSON Schema's shape (`properties` an object
    of schemas, `required` a list of names, ...), walked without recursion however deep it nests; a
    plan's schema (one with `properties.steps`) must name its roles as strings, as plans do."""
    todo = [(schema, where)]
    while todo:
        node, at = todo.pop()
        if not isinstance(node, dict):
            return f"{at}: must be a JSON Schema object"
        kind = node.get("type")
        if kind is not None and not _names(kind if isinstance(kind, list) else [kind], allow_empty=False):
            return f"{at}.type: must be a type name or a list of them"
        if "required" in node and not _names(node["required"]):
            return f"{at}.required: must be a list of property names"
        if "enum" in node and (not isinstance(node["enum"], list) or not node["enum"]):
            return f"{at}.enum: must be a non-empty list of values"
        for key in _SCHEMAS:
            if key in node and not (key == "additionalProperties" and isinstance(node[key], bool)):
                todo.append((node[key], f"{at}.{key}"))
        for key in _SCHEMA_MAPS:
            if key in node and not isinstance(node[key], dict):
                return f"{at}.{key}: must be an object of schemas, one per name"
            todo += [(inner, f"{at}.{key}.{name}") for name, inner in node.get(key, {}).items()]
        for key in _SCHEMA_LISTS:
            if key in node and (not isinstance(node[key], list) or not node[key]):
                return f"{at}.{key}: must be a non-empty list of schemas"
            todo += [(inner, f"{at}.{key}.{i}") for i, inner in enumerate(node.get(key, []))]
    role = schema  # every schema on the way is an object now
    for key in ("properties", "steps", "items", "properties", "role"):
        role = role.get(key, {})
    if "enum" in role and not _names(role["enum"]):
        return f"{where}.properties.steps.items.properties.role.enum: the roles a plan may name, as strings"
    return ""


def _names(value: Any, allow_empty: bool = True) -> bool:
    """Whether `value` is a list of strings (non-empty ones unless `allow_empty`)."""
    return isinstance(value, list) and all(isinstance(v, str) and (allow_empty or v) for v in value)


def _cache_control(value: Any, where: str) -> str:
    if not isinstance(value, dict) or value.get("type", "ephemeral") != "ephemeral":
        return f"{where}: must be {{'type': 'ephemeral'}} (with an optional ttl)"
    if value.get("ttl", "5m") not in LIFETIMES:
        return f"{where}.ttl: must be one of {', '.join(LIFETIMES)}"
    return ""


def _marker(block: dict, where: str) -> str:
    """A block's optional `cache_control`."""
    marker = block.get("cache_control")
    return "" if marker is None else _cache_control(marker, f"{where}.cache_control")


def _text(block: dict, where: str) -> str:
    return "" if isinstance(block.get("text"), str) else f"{where}.text: must be a string"


def _messages(value: Any) -> str:
    if not isinstance(value, list) or not value:
        return "messages: a non-empty list of messages is required"
    for i, message in enumerate(value):
        at = f"messages.{i}"
        if not isinstance(message, dict):
            return f"{at}: must be an object with a role and content"
        if message.get("role") not in ROLES:
            return f"{at}.role: must be 'user' or 'assistant'"
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            return f"{at}.content: must be a string or a list of content blocks"
        for j, block in enumerate(content):
            if said := _block(block, f"{at}.content.{j}"):
                return said
    return ""


def _block(block: Any, where: str) -> str:
    """One content block of a message: its type, and the fields that type needs."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return f"{where}: must be a content block, an object with a type"
    kind = block["type"]
    if kind == "text":
        said = _text(block, where)
    elif kind == "tool_use":
        wrong = [f"{where}.{k}: must be a string" for k in ("id", "name") if type(block.get(k)) is not str]
        if not isinstance(block.get("input"), dict):
            wrong.append(f"{where}.input: must be an object")
        said = wrong[0] if wrong else ""
    elif kind == "tool_result":
        said = _tool_result(block, where)
    else:  # thinking, image, document...: the simulator reads them as JSON
        said = ""
    return said or _marker(block, where)


def _tool_result(block: dict, where: str) -> str:
    if not isinstance(block.get("tool_use_id"), str):
        return f"{where}.tool_use_id: must be a string"
    if not isinstance(block.get("is_error", False), bool):
        return f"{where}.is_error: must be true or false"
    content = block.get("content", "")
    if isinstance(content, str):
        return ""
    if not isinstance(content, list):
        return f"{where}.content: must be a string or a list of content blocks"
    for k, inner in enumerate(content):
        at = f"{where}.content.{k}"
        if not isinstance(inner, dict) or not isinstance(inner.get("type"), str):
            return f"{at}: must be a content block, an object with a type"
        if inner["type"] == "text" and (said := _text(inner, at)):
            return said
    return ""
