"""moto's answers, the same bytes for less CPU: the simulation's one change to how moto works inside.

moto 5 writes an answer by walking the operation's botocore output shape and, for every member of every
structure, asking an attribute picker which names the Python value may hold it under (`DBInstanceId`,
`db_instance_id`, a `Meta.serialization_aliases` entry, ...). The picker works those names out again at every
member of every answer (six alias providers built each time, `xform_name`, the key path joined): about a third
of the CPU of an AWS call in a chaos run, where one seed makes ~900 calls. And every call lists the methods of
its response class (`inspect.getmembers`) to find the action's.

Rules:
- The names are a function of the member's shape, its parent structure, the value's type and the key (the
  alias providers read nothing else), and moto's service models and their shapes live as long as the process
  (`moto.core.utils.get_service_model` is cached), so the names are computed once per (shape, parent, type,
  key) and kept, each entry holding its shape and parent so that no other shape can take their ids.
- Everything else is moto's own code: the value is read with moto's `get_value`, in the same order of names,
  and a service's response transformers are applied as moto applies them. A value that carries its own
  aliases (`Meta`), or a picker other than moto's default one, goes through moto's picker unchanged.
- The method names of a response class are kept per class and recomputed when a class of its MRO gains or
  loses an attribute.
- `session(region)` is a boto3 session like any other except that its botocore loader shares the process's
  cache of loaded data files (service models, endpoints, ...), which every new session otherwise reads and
  decodes again: the world of each seed makes one, and ~20 clients. The cache is shared only between loaders
  with the same search paths, so a session never sees a file another search path would not have found.
- `install()` is idempotent and does nothing on a moto version other than the pinned one (`PINNED`), whose
  serializer this was read from; `tests/sim/test_moto_speed.py` checks that answers are byte for byte moto's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PINNED = "5.2.5"
_installed = False
_original: Any = None
_loaded: dict[tuple[str, ...], dict[Any, Any]] = {}


def session(region: str) -> Any:
    """A boto3 session for `region` whose data loader shares the process's cache of loaded files."""
    import boto3  # type: ignore[import-untyped]

    fresh = boto3.session.Session(region_name=region)
    loader = fresh._session.get_component("data_loader")
    # botocore's `instance_cache` keeps what a loader read in `loader._cache` (its documented requirement)
    loader._cache = _loaded.setdefault(tuple(loader.search_paths), loader._cache)
    return fresh


def install() -> bool:
    """Swap moto's member picker for the memoised one (once per process); False when moto is not `PINNED`."""
    global _installed, _original
    if _installed:
        return True
    import moto
    from moto.core import responses, serialize
    from moto.core.constants import MISSING
    from moto.core.utils import get_value, method_names_from_class

    if moto.__version__ != PINNED:
        return False
    original = _original = serialize.ResponseSerializer.get_value
    default_providers = serialize.DEFAULT_ALIAS_PROVIDERS
    picker_type = serialize.XFormedAttributePicker
    names: dict[tuple[int, int, type, str], tuple[Any, Any, tuple[str, ...], bool]] = {}

    def get_member_value(self: Any, value: Any, key: str, shape: Any) -> Any:
        picker = self._value_picker
        if (
            type(picker) is not picker_type
            or picker.alias_providers is not default_providers
            or hasattr(value, "Meta")
        ):
            return original(self, value, key, shape)
        parent = getattr(shape, "parent", None)
        slot = (id(shape), id(parent), type(value), key)
        known = names.get(slot)
        if known is None or known[0] is not shape or known[1] is not parent:
            context = serialize.AttributePickerContext(
                obj=value,
                key=key,
                shape=shape,
                operation_model=self.operation_model,
                service_model=self.operation_model.service_model,
                key_path=".".join(self.path),
            )
            found_names = tuple(picker.get_possible_keys(context))
            known = (shape, parent, found_names, any("." in n for n in found_names))
            names[slot] = known
        found = None
        read = value.get if type(value) is dict and not known[3] else None
        for name in known[2]:  # a plain dict and undotted names: moto's `get_value` is `dict.get`
            found = read(name, MISSING) if read is not None else get_value(value, name, MISSING)
            if found is not MISSING:
                break
        else:
            found = None
        if picker.response_transformers:
            key_path = f"{'.'.join(self.path)}.{key}"
            for transform_path, transform in picker.response_transformers.items():
                if key_path.endswith(transform_path):
                    found = transform(found)
                    break
        return found

    serialize.ResponseSerializer.get_value = get_member_value  # type: ignore[method-assign]
    vars(responses)["method_names_from_class"] = _method_names(method_names_from_class)
    _installed = True
    return True


def uninstall() -> None:
    """moto's own picker again (the tests compare both)."""
    global _installed
    if _installed:
        from moto.core import responses, serialize, utils

        serialize.ResponseSerializer.get_value = _original  # type: ignore[method-assign]
        vars(responses)["method_names_from_class"] = utils.method_names_from_class
        _installed = False


def _method_names(names_of: Callable[[object], list[str]]) -> Callable[[object], list[str]]:
    """moto's `method_names_from_class` (an `inspect.getmembers` of the response class at every call), kept
    per class while no class of its MRO gains or loses an attribute."""
    known: dict[object, tuple[tuple[int, ...], list[str]]] = {}

    def method_names(clazz: object) -> list[str]:
        stamp = tuple(len(vars(c)) for c in clazz.__mro__)  # type: ignore[attr-defined]
        kept = known.get(clazz)
        if kept is None or kept[0] != stamp:
            kept = (stamp, names_of(clazz))
            known[clazz] = kept
        return kept[1]

    return method_names
