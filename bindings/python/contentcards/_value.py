"""The base of the package's immutable value classes (:class:`~contentcards.Card` and the
results): ``__slots__``, fields that cannot be assigned, equality and hashing by the fields,
a ``repr`` and :meth:`Value._replace`.

Written by hand rather than with ``dataclasses``: importing ``dataclasses`` (with ``inspect``)
and generating the methods was about half of ``import contentcards`` (docs/PERFORMANCE.md,
"Import time"). ``dataclass_transform`` tells type checkers so: ``mypy --strict`` rejects an
assignment to a field as it did for the frozen dataclasses. A subclass lists its fields in ``__slots__`` and sets them in ``__init__`` with
``object.__setattr__`` (or through the slot descriptors, as ``cards._build`` does).
"""

from __future__ import annotations


# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

    # typing_extensions: these came to typing after Python 3.9 (typeshed has it, for any version)
    from typing_extensions import Self, dataclass_transform
else:
    def dataclass_transform(**_options: object) -> object:
        """Only for type checkers (typing is not imported at run time)."""
        return lambda cls: cls

__all__ = ["FrozenInstanceError", "Value"]

_set = object.__setattr__


class FrozenInstanceError(AttributeError):
    """Assigning to (or deleting) a field of an immutable value."""


@dataclass_transform(frozen_default=True, eq_default=True)
class Value:
    """An immutable value: subclasses declare ``__slots__`` (the fields, in order)."""

    __slots__ = ()

    #: Fields left out of equality and hashing (``Update.raw``), and of hashing only
    #: (``Card.extras``, a mapping).
    _not_compared: ClassVar[frozenset[str]] = frozenset()
    _not_hashed: ClassVar[frozenset[str]] = frozenset()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: "
                                  f"{type(self).__name__} is immutable (use _replace)")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}: "
                                  f"{type(self).__name__} is immutable")

    @property
    def _fields(self) -> tuple[str, ...]:
        """The fields, in order (the subclass's __slots__)."""
        fields: tuple[str, ...] = type(self).__slots__
        return fields

    def _compared(self) -> tuple[Any, ...]:
        skip = self._not_compared
        return tuple(getattr(self, name) for name in self._fields if name not in skip)

    def __eq__(self, other: object) -> bool:
        # isinstance for the type checkers that do not narrow on __class__ (mypy for Python 3.9)
        if other.__class__ is not self.__class__ or not isinstance(other, Value):
            return NotImplemented
        return bool(self._compared() == other._compared())

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        skip = self._not_compared | self._not_hashed
        return hash(tuple(getattr(self, name) for name in self._fields if name not in skip))

    def __repr__(self) -> str:
        skip = self._not_compared
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields
                           if name not in skip)
        return f"{type(self).__name__}({fields})"

    def _replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (as ``NamedTuple._replace``); an unknown field is a
        TypeError."""
        unknown = set(changes) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        new = object.__new__(type(self))
        for name in self._fields:
            _set(new, name, changes[name] if name in changes else getattr(self, name))
        return new

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), tuple(getattr(self, name) for name in self._fields)))


def _rebuild(cls: type[Value], values: tuple[Any, ...]) -> Value:
    new = object.__new__(cls)
    fields: tuple[str, ...] = cls.__slots__
    for name, value in zip(fields, values):
        _set(new, name, value)
    return new
