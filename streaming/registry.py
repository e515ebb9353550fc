"""Named registries of classes and functions, backed by ``catalogue`` as in the reference.

``streams_registry`` (:mod:`streaming.stream`) is one: ``StreamingDataset(stream_name=...,
stream_config=...)`` builds its stream from it, and packages can add theirs through the
``streaming_streams_registry`` entry-point group, exactly as with mosaicml-streaming. The
reference's module path ``streaming.base.registry_utils`` re-exports this module.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar, Union

import catalogue

__all__ = [
    "TypedRegistry",
    "create_registry",
    "construct_from_registry",
    "import_file",
    "save_registry",
]

T = TypeVar("T")
S = TypeVar("S")
TypeBoundT = TypeVar("TypeBoundT", bound=type)
CallableBoundT = TypeVar("CallableBoundT", bound=Callable[..., Any])


class TypedRegistry(catalogue.Registry, Generic[T]):
    """A ``catalogue.Registry`` with a description and typed accessors.

    Args:
        namespace (Sequence[str]): The registry's namespace, e.g. ``("streaming",
            "streams_registry")``; entry points are read from the group that joins it with ``_``.
        entry_points (bool): Whether names registered through entry points are found too.
            Defaults to ``False``.
        description (str): What the registry holds. Defaults to ``''``.
    """

    def __init__(self, namespace: Sequence[str], entry_points: bool = False,
                 description: str = "") -> None:
        super().__init__(namespace, entry_points=entry_points)
        self.description = description

    def __call__(self, name: str, func: T | None = None) -> Callable[[T], T]:
        return super().__call__(name, func)

    def register(self, name: str, *, func: T | None = None) -> T:
        """Register ``func`` under ``name`` (as a decorator when ``func`` is ``None``).

        Args:
            name (str): The name to register it under.
            func (T, optional): The class or function. Defaults to ``None``.

        Returns:
            T: ``func``, or a decorator that registers what it decorates.
        """
        return super().register(name, func=func)

    def register_class(self, name: str, *, func: TypeBoundT | None = None) -> TypeBoundT:
        """Register a class under ``name``; see :meth:`register`."""
        return super().register(name, func=func)

    def get(self, name: str) -> T:
        """Return what is registered under ``name``.

        Args:
            name (str): The registered name.

        Returns:
            T: The registered class or function.

        Raises:
            catalogue.RegistryError: Nothing is registered under ``name``.
        """
        return super().get(name)

    def get_all(self) -> dict[str, T]:
        """Return every registered name and what it maps to (entry points included)."""
        return super().get_all()

    def get_entry_point(self, name: str, default: T | None = None) -> T:
        """Return the entry point registered under ``name``, or ``default``."""
        return super().get_entry_point(name, default=default)

    def get_entry_points(self) -> dict[str, T]:
        """Return every entry point of the registry's group."""
        return super().get_entry_points()


def create_registry(*namespace: str, generic_type: type[S], entry_points: bool = False,
                    description: str = "") -> TypedRegistry[S]:
    """Create a new registry.

    Args:
        namespace (str): The namespace's parts, e.g. ``"streaming", "streams_registry"``.
        generic_type (Type[S]): The type of what it holds (for type checkers).
        entry_points (bool): Whether names registered through entry points are found too.
            Defaults to ``False``.
        description (str): What the registry holds. Defaults to ``''``.

    Returns:
        TypedRegistry[S]: The registry.

    Raises:
        catalogue.RegistryError: A registry already has this namespace.
    """
    if catalogue.check_exists(*namespace):
        raise catalogue.RegistryError(f"Namespace already exists: {namespace}")
    return TypedRegistry[generic_type](namespace, entry_points=entry_points,  # type: ignore[valid-type]
                                       description=description)


def construct_from_registry(
    name: str,
    registry: TypedRegistry,
    partial_function: bool = True,
    pre_validation_function: Union[Callable[[Any], None], type] | None = None,
    post_validation_function: Callable[[Any], None] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> Any:
    """Build the item registered under ``name`` with ``kwargs``.

    A class (or, with ``partial_function=False``, any callable) is called with ``kwargs``; a
    function is otherwise bound to them with :func:`functools.partial`.

    Args:
        name (str): The registered name.
        registry (TypedRegistry): The registry to look it up in.
        partial_function (bool): Whether a registered function is returned bound rather than
            called. Defaults to ``True``.
        pre_validation_function (Union[Callable[[Any], None], type], optional): Run on the
            registered item before it is built: a type it must be a subclass of, or a function
            that raises if it is not valid. Defaults to ``None``.
        post_validation_function (Callable[[Any], None], optional): Run on the built item; it
            raises if the item is not valid. Defaults to ``None``.
        kwargs (Dict[str, Any], optional): The arguments to build it with. Defaults to ``None``.

    Returns:
        Any: The built item.

    Raises:
        ValueError: A validation failed, or the registered item is neither a class nor callable.
    """
    kwargs = {} if kwargs is None else kwargs
    item = registry.get(name)
    if pre_validation_function is not None:
        if isinstance(pre_validation_function, type):
            if not (isinstance(item, type) and issubclass(item, pre_validation_function)):
                raise ValueError(f"Expected {name} to be of type {pre_validation_function}, "
                                 f"but got {type(item)}")
        elif callable(pre_validation_function):
            pre_validation_function(item)
        else:
            raise ValueError("Expected pre_validation_function to be a callable or a type, "
                             f"but got {type(pre_validation_function)}")
    if isinstance(item, type) or (callable(item) and not partial_function):
        built = item(**kwargs)
    elif callable(item):
        built = functools.partial(item, **kwargs)
    else:
        raise ValueError(f"Expected {name} to be a class or function, but got {type(item)}")
    if post_validation_function is not None:
        post_validation_function(built)
    return built


def import_file(loc: Union[str, Path]) -> ModuleType:
    """Import a Python file as a module (to run the registrations it makes).

    Args:
        loc (Union[str, Path]): Path to the file.

    Returns:
        ModuleType: The module.

    Raises:
        FileNotFoundError: ``loc`` does not exist.
        RuntimeError: Running the file raised; the cause is chained.
    """
    if not os.path.exists(loc):
        raise FileNotFoundError(f"File {loc} does not exist.")
    spec = importlib.util.spec_from_file_location("python_code", str(loc))
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{loc}: not importable as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise RuntimeError(f"Error executing {loc}") from err
    return module


@contextmanager
def save_registry() -> Iterator[None]:
    """Restore every registry's contents when the block exits (registrations made in it go)."""
    saved = copy.deepcopy(catalogue.REGISTRY)
    try:
        yield
    finally:
        catalogue.REGISTRY = saved
