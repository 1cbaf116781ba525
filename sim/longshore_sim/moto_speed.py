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
- A request is routed as moto routes it (`BotocoreStubber.process_request`): the first service whose URL
  pattern matches the URL without its query, then the first URL of that service's backend that matches it.
  Both are functions of that URL and of moto's static URL tables (`backend_index.backend_url_patterns`, the
  backend class's `url_bases` and `url_paths`), so the pattern found for a URL is kept, and so is each backend
  class's URL table (`backend.urls`, which moto otherwise rebuilds and scans, compiling every pattern, at every
  request): ~175 regex matches and a rebuilt table less per call. Passthrough and whitelist checks, the backend
  lookup and the handler's call are moto's own, at every request.
- `session(region)` is a boto3 session like any other except that its botocore loader shares the process's
  cache of loaded data files (service models, endpoints, ...), which every new session otherwise reads and
  decodes again: the world of each seed makes one, and ~20 clients. The cache is shared only between loaders
  with the same search paths, so a session never sees a file another search path would not have found.
  Its clients sign their requests as any boto3 client does.
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
_original_route: Any = None
_service_of_url: dict[str, str | None] = {}  # URL without query -> the first service whose pattern matches
_urls_of: dict[tuple[type, tuple[str, ...], bool], dict[str, Any]] = {}  # (class, url_bases, iso) -> .urls
_handler_key: dict[tuple[type, tuple[str, ...], bool, str], str | None] = {}  # ... and URL -> its first URL


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
    from moto.core import botocore_stubber

    global _original_route
    _original_route = botocore_stubber.BotocoreStubber.process_request
    botocore_stubber.BotocoreStubber.process_request = _route  # type: ignore[method-assign]
    _installed = True
    return True


def uninstall() -> None:
    """moto's own picker again (the tests compare both)."""
    global _installed
    if _installed:
        from moto.core import responses, serialize, utils

        serialize.ResponseSerializer.get_value = _original  # type: ignore[method-assign]
        vars(responses)["method_names_from_class"] = utils.method_names_from_class
        from moto.core import botocore_stubber

        botocore_stubber.BotocoreStubber.process_request = _original_route  # type: ignore[method-assign]
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


def _route(self: Any, request: Any) -> Any:
    """moto's `BotocoreStubber.process_request`, with the service and the backend URL found for a URL kept."""
    import re

    import moto.backend_index as backend_index
    import moto.backends as backends
    from moto.core.base_backend import BackendDict
    from moto.core.config import passthrough_service, passthrough_url, service_whitelisted
    from moto.core.exceptions import ServiceNotWhitelisted
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.core.request import normalize_request
    from moto.core.utils import get_equivalent_url_in_aws_domain
    from moto.moto_api import recorder
    from moto.settings import enable_iso_regions
    from werkzeug.exceptions import HTTPException

    parsed_url, _ = get_equivalent_url_in_aws_domain(request.url)
    clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
    if passthrough_url(clean_url):
        return None
    if clean_url in _service_of_url:
        service = _service_of_url[clean_url]
    else:
        service = next(
            (s for s, pattern in backend_index.backend_url_patterns if pattern.match(clean_url)), None
        )
        _service_of_url[clean_url] = service
    if service is not None:  # moto tries the next matching service only when the first has no URL for it
        if passthrough_service(service):
            return None
        if not service_whitelisted(service):
            raise ServiceNotWhitelisted(service)
        backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
        if isinstance(backend_dict, BackendDict):
            if "us-east-1" in backend_dict[DEFAULT_ACCOUNT_ID]:
                backend = backend_dict[DEFAULT_ACCOUNT_ID]["us-east-1"]
            else:
                backend = backend_dict[DEFAULT_ACCOUNT_ID]["aws"]
        else:
            backend = backend_dict["global"]
        table = (type(backend), tuple(backend.url_bases), enable_iso_regions())
        urls = _urls_of.get(table)
        if urls is None:
            urls = _urls_of[table] = backend.urls
        slot = (*table, clean_url)
        if slot in _handler_key:
            url = _handler_key[slot]
        else:
            url = _handler_key[slot] = next((u for u in urls if re.compile(u).match(clean_url)), None)
        if url is None:
            return _original_route(self, request)  # the rare URL of a later service: moto's own walk
        normalized_request = normalize_request(request)
        try:
            recorder._record_request(normalized_request)
            status, headers, body = urls[url](
                normalized_request, normalized_request.raw_url, normalized_request.headers
            )
        except HTTPException as e:
            status, headers, body = e.code, e.get_headers(), e.get_body()
        return status, headers, body
    if re.compile(r"https?://.+\.amazonaws.com/.*").match(clean_url):
        return 404, {}, "Not yet implemented"
    return None
