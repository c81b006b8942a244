"""jsonschema's errors for a document, asked only where jsonschema-rs found one.

jsonschema (Python), whose messages the findings quote, walks the whole document: a millisecond a case, so
minutes for a manifest of 100,000 cases, or of 20,000 outputs, with one wrong field. jsonschema-rs finds every
error's field and the keyword that failed there in Rust; jsonschema then checks only those keywords on those
fields (a "site": the field, and where in the schema its failing keywords sit), which gives the same errors, in
the same order, as its whole walk. Rust is the stricter of the two (a pattern's `$` before a final newline), so
no error jsonschema would find lies where Rust found none; a keyword whose meaning depends on what its siblings
saw (`unevaluatedProperties`) is not checked alone, and then the whole walk runs, as it does without Rust.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from checker.manifest.schema import fast_validator, load, validator

# Keywords whose verdict on a value depends on that value and their own schema alone, with the siblings they
# read: the ones a site may hold.
_ALONE = frozenset(
    {
        *("type", "enum", "const", "pattern", "minLength", "maxLength", "multipleOf"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
        *("minItems", "maxItems", "uniqueItems", "required", "dependentRequired", "minProperties", "maxProperties"),
        *("additionalProperties", "oneOf", "anyOf", "not"),
    }
)
MAX_ERRORS = 1000  # errors listed: more says no more about a manifest, and costs the report its size
Sites = dict[tuple[tuple[Any, ...], tuple[Any, ...]], set[str]]  # (field path, schema path) -> failing keywords
_READS = {"additionalProperties": ("properties", "patternProperties")}  # the siblings' names it reads


class NoSites(Exception):
    """The errors cannot be asked for site by site: walk the whole document."""


def schema_errors(data: Any, name: str = "manifest") -> tuple[list[Any], bool]:
    """jsonschema's errors for `data`, sorted by the field at fault as a whole walk sorts them: those at the sites
    of Rust's first `MAX_ERRORS` errors, and whether there are more (a hostile manifest may hold millions)."""
    try:
        sites, more = _sites(data, name)
        found = sorted(_errors_at_sites(data, name, sites), key=lambda pair: pair[0])
        return [err for _, err in found], more
    except NoSites:
        errors = sorted(validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
        return errors[:MAX_ERRORS], len(errors) > MAX_ERRORS


def _errors_at_sites(data: Any, name: str, sites: Sites) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Each error with its sort key: the field's path, then where its site sits in the schema's own order (the
    order of a whole walk), then its place among the site's errors."""
    schema = load(name)
    whole = validator(name)
    for (path, where), keywords in _outermost(sites).items():
        site = _schema_at(schema, where)
        if not isinstance(site, dict) or not keywords <= _ALONE | {WHOLE}:
            raise NoSites
        alone = site if WHOLE in keywords else _alone(site, keywords)
        order = _order(schema, where)
        for n, err in enumerate(whole.evolve(schema=alone).iter_errors(_value_at(data, path))):
            err.path.extendleft(reversed(path))
            yield (list(err.absolute_path), order, n), err


def _alone(site: dict[str, Any], keywords: set[str]) -> dict[str, Any]:
    """The site's failing keywords as a schema of their own, with the names of the siblings they read (their
    values are other sites')."""
    alone = {k: v for k, v in site.items() if k in keywords}
    for read in {read for k in keywords for read in _READS.get(k, ())} & set(site):
        alone[read] = dict.fromkeys(site[read], True)
    return alone


def _sites(data: Any, name: str) -> tuple[Sites, bool]:
    """Rust's first `MAX_ERRORS` errors by site, and whether it found more (not counted: each costs Rust an
    error object and its message)."""
    fast = fast_validator(name)
    if fast is None:
        raise NoSites
    sites: Sites = {}
    try:
        for n, err in enumerate(fast.iter_errors(data)):
            if n == MAX_ERRORS:
                return sites, True
            path, where, keyword = _site(tuple(err.instance_path), tuple(err.schema_path))
            sites.setdefault((path, where), set()).add(keyword)
    except NoSites:
        raise
    except Exception as exc:  # data Rust cannot take (a lone surrogate, an integer past 64 bits)
        raise NoSites from exc
    return sites, False


# Schema steps that go one level into the value (a property by its name, an item), and those followed by a name
# or an index that stays on the same value.
_INTO = frozenset(("items", "additionalProperties"))
_NAMED_INTO = frozenset(("properties", "patternProperties", "prefixItems"))
_NAMED_HERE = frozenset(("allOf", "anyOf", "oneOf", "dependentSchemas", "$defs"))
_ANY_NAME = frozenset(("additionalProperties", "patternProperties"))  # steps into a property of any name
WHOLE = "*"  # a site's keywords: every keyword of its schema


def _site(path: tuple[Any, ...], schema_path: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...], str]:
    """An error's site: the field, the schema path of the keyword's schema, and the keyword.

    Rust leaves a property named "" out of an error's path. Where the path is shorter than the schema path says,
    the site is the object above the first property of any name (`additionalProperties`), checked whole: its
    errors are those of a whole walk there, whatever its properties are named."""
    *where, keyword = schema_path
    into: list[int] = []  # where the schema path goes one level into the value
    i = 0
    while i < len(where):
        if where[i] in _INTO or where[i] in _NAMED_INTO:
            into.append(i)
        i += 2 if where[i] in _NAMED_INTO or where[i] in _NAMED_HERE else 1
    if len(into) == len(path):
        return path, tuple(where), str(keyword)
    lossy = next((n for n, i in enumerate(into) if where[i] in _ANY_NAME), None)
    if lossy is None or lossy > len(path):
        raise NoSites
    return path[:lossy], tuple(where[: into[lossy]]), WHOLE


def _outermost(sites: Sites) -> Sites:
    """The sites without those inside a site checked whole, whose errors that one finds."""
    whole = [(path, where) for (path, where), keywords in sites.items() if WHOLE in keywords]
    return {
        (path, where): keywords
        for (path, where), keywords in sites.items()
        if not any((path, where) != (p, w) and path[: len(p)] == p and where[: len(w)] == w for p, w in whole)
    }


def _schema_at(schema: dict[str, Any], where: tuple[Any, ...]) -> Any:
    """The subschema at a schema path, following local `$ref`s as Rust's paths go through them."""
    node: Any = schema
    try:
        for step in where:
            node = _ref_target(schema, node) if step == "$ref" else node[step]
    except (KeyError, IndexError, TypeError) as exc:
        raise NoSites from exc
    return node


def _ref_target(schema: dict[str, Any], node: Any) -> Any:
    ref = node.get("$ref") if isinstance(node, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise NoSites
    target: Any = schema
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        target = target[int(part)] if isinstance(target, list) else target[part]
    return target


def _order(schema: dict[str, Any], where: tuple[Any, ...]) -> tuple[int, ...]:
    """Where a site sits in a whole walk: at each step, the place of the keyword (or item) it goes through."""
    node: Any = schema
    out = []
    for step in where:
        if step == "$ref":
            out.append(list(node).index("$ref"))
            node = _ref_target(schema, node)
        elif isinstance(node, dict):
            out.append(list(node).index(step))
            node = node[step]
        else:
            out.append(int(step))
            node = node[step]
    return tuple(out)


def _value_at(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data
