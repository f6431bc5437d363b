"""From cards to the application's own objects: the ContentCardable pattern.

A class type (``extras["class_type"]``, normalized: stripped, lower case) decides which of the
application's classes a card becomes. Subclass :class:`ContentCardable`, say which class types
the class handles, and build the object from the card in :meth:`ContentCardable.from_card`
(return None to decline a card)::

    class HomeTile(ContentCardable):
        class_types = ("home_tile",)

        def __init__(self, title: str, price: float) -> None:
            self.title, self.price = title, price

        @classmethod
        def from_card(cls, card: Card) -> "HomeTile | None":
            try:
                return cls(card.extras["tile_title"], float(card.extras["tile_price"]))
            except (KeyError, ValueError):
                return None          # declined: not a usable tile

    registry = Registry(HomeTile)     # or registry.register("home_tile", HomeTile)
    tiles = controller.convert(registry)          # feed order; other and declined cards skipped
    tiles[0].log_impression()                     # logged by card id through the controller

Every converted object gets ``card_id``, ``class_type`` and ``content_card_data`` (a
:class:`ContentCardData`, set after ``from_card`` returns, also on frozen dataclasses), and
objects converted through a controller can log themselves. ``is_content_card`` is False for
the application's own objects of the same class. An exception raised by ``from_card`` is a bug
of the application and propagates.
"""

from __future__ import annotations


from ._value import Value
from .cards import Card, normalize_class_type

# typing is not imported at run time (it would slow `import contentcards`); mypy reads this as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Callable, ClassVar, Protocol, TypeVar, overload

    from typing_extensions import Self  # typing's since Python 3.11

    from .results import LogResult

    class _CardLogger(Protocol):
        """What a converted object logs itself through: the three logging calls of a
        :class:`~contentcards.ContentCards` controller, given the object's card id. The
        controller hands itself to the objects it converts (``controller.convert(registry)``);
        nothing else of it is used here, so this module does not import the controller."""

        def log_impression(self, card_id: str, /) -> LogResult: ...

        def log_click(self, card_id: str, /) -> LogResult: ...

        def log_dismissal(self, card_id: str, /) -> LogResult: ...

__all__ = ["ContentCardData", "ContentCardable", "Registry"]

_set = object.__setattr__


class ContentCardData(Value):
    """What an object made from a card keeps of it (the implementation guide's
    ``ContentCardData``, as in Swift): ``card_id``, ``class_type``, ``created_at`` and
    ``expires_at`` (unix seconds; -1: never), ``is_pinned``, ``is_dismissible``,
    ``is_control``. Two are equal when their card ids are: the same card seen twice, before and
    after its state changed, is the same content card."""

    __slots__ = ("card_id", "class_type", "created_at", "expires_at", "is_pinned",
                 "is_dismissible", "is_control")
    card_id: str
    class_type: str
    created_at: int
    expires_at: int
    is_pinned: bool
    is_dismissible: bool
    is_control: bool

    def __init__(self, card: Card) -> None:
        _set(self, "card_id", card.id)
        _set(self, "class_type", card.class_type)
        _set(self, "created_at", card.created_timestamp)
        _set(self, "expires_at", card.expires_at_timestamp)
        _set(self, "is_pinned", card.pinned)
        _set(self, "is_dismissible", card.dismissible)
        _set(self, "is_control", card.is_control)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContentCardData):
            return NotImplemented
        return self.card_id == other.card_id

    def __hash__(self) -> int:
        return hash(self.card_id)


class ContentCardable:
    """Base class of the application's objects made from cards (see the module docstring).

    Subclasses set ``class_types`` (the class types they handle, for :class:`Registry`) and
    implement :meth:`from_card`.
    """

    __slots__ = ("card_id", "class_type", "content_card_data", "_contentcards_controller")

    #: The class types this class handles (normalized when registered).
    class_types: ClassVar[tuple[str, ...]] = ()

    card_id: str
    class_type: str
    content_card_data: ContentCardData | None

    @property
    def is_content_card(self) -> bool:
        """True when this object was made from a card (``content_card_data`` is set)."""
        return getattr(self, "content_card_data", None) is not None

    @classmethod
    def from_card(cls, card: Card) -> Self | None:
        """Builds the object from a card, or returns None to decline it."""
        raise NotImplementedError(f"{cls.__name__}.from_card is not implemented")

    def _logger(self) -> _CardLogger:
        """What this object logs through: the controller that converted it."""
        if not self.is_content_card:
            raise RuntimeError(f"{type(self).__name__} is not a content card "
                             "(content_card_data is None)")
        logger: _CardLogger | None = getattr(self, "_contentcards_controller", None)
        if logger is None:
            raise RuntimeError(
                f"{type(self).__name__} for card {getattr(self, 'card_id', '?')!r} was not "
                "converted through a controller: use controller.convert(registry), or log "
                "with controller.log_impression(obj)")
        return logger

    def log_impression(self) -> LogResult:
        """Logs an impression of this object's card through its controller."""
        return self._logger().log_impression(self.card_id)

    def log_click(self) -> LogResult:
        """Logs a click on this object's card (not recorded when the card has no valid url)."""
        return self._logger().log_click(self.card_id)

    def log_dismissal(self) -> LogResult:
        """Dismisses this object's card (not recorded when it is not dismissible)."""
        return self._logger().log_dismissal(self.card_id)


if TYPE_CHECKING:
    C = TypeVar("C", bound=type[ContentCardable])


class Registry:
    """Which ContentCardable class each class type becomes.

    ``Registry(HomeTile, Message)`` registers each class for its declared ``class_types``;
    :meth:`register` adds more, also as a decorator.
    """

    def __init__(self, *classes: type[ContentCardable]) -> None:
        self._factories: dict[str, type[ContentCardable]] = {}
        for cls in classes:
            self.register(cls)

    if TYPE_CHECKING:
        @overload
        def register(self, class_type: C, cls: None = None, /) -> C: ...

        @overload
        def register(self, class_type: str, cls: C, /) -> C: ...

        @overload
        def register(self, class_type: str, cls: None = None, /) -> Callable[[C], C]: ...

    def register(self, class_type: str | type[ContentCardable],
                 cls: type[ContentCardable] | None = None, /) -> object:
        """``register(Cls)`` registers Cls for ``Cls.class_types``; ``register("home_tile",
        Cls)`` for one class type; ``@register("home_tile")`` and ``@register`` decorate.
        Registering a class type twice for different classes is a ValueError."""
        if isinstance(class_type, type):
            if cls is not None:
                raise TypeError("register(Cls) takes no second argument")
            if not class_type.class_types:
                raise ValueError(f"{class_type.__name__} declares no class_types; use "
                                 f"register('class_type', {class_type.__name__})")
            for name in class_type.class_types:
                self._add(name, class_type)
            return class_type
        if not isinstance(class_type, str):
            raise TypeError(f"class type must be a str, not {type(class_type).__name__}")
        if cls is None:
            name = class_type

            def decorator(target: C) -> C:
                self._add(name, target)
                return target

            return decorator
        self._add(class_type, cls)
        return cls

    def _add(self, class_type: str, cls: type[ContentCardable]) -> None:
        if not (isinstance(cls, type) and issubclass(cls, ContentCardable)):
            raise TypeError(f"{cls!r} is not a ContentCardable subclass")
        key = normalize_class_type(class_type)
        existing = self._factories.get(key)
        if existing is not None and existing is not cls:
            raise ValueError(f"class type {key!r} is already registered to {existing.__name__}")
        self._factories[key] = cls

    @property
    def class_types(self) -> tuple[str, ...]:
        """The normalized class types registered, in registration order."""
        return tuple(self._factories)

    def factory_for(self, class_type: str) -> type[ContentCardable] | None:
        """The class registered for a class type (normalized), or None."""
        return self._factories.get(normalize_class_type(class_type))

    def convert(self, cards: Iterable[Card], class_types: Iterable[str] | str | None = None,
                controller: _CardLogger | None = None) -> list[ContentCardable]:
        """The objects the cards become, in the cards' order: cards of a class type with no
        registered class, outside ``class_types`` (when given), or declined by ``from_card``
        are skipped. With ``controller`` the objects can log themselves through it."""
        wanted: set[str] | None = None
        if class_types is not None:
            names = [class_types] if isinstance(class_types, str) else list(class_types)
            wanted = {normalize_class_type(name) for name in names} or None
        out: list[ContentCardable] = []
        for card in cards:
            key = normalize_class_type(card.class_type)
            if wanted is not None and key not in wanted:
                continue
            factory = self._factories.get(key)
            if factory is None:
                continue
            obj = factory.from_card(card)
            if obj is None:
                continue
            object.__setattr__(obj, "card_id", card.id)
            object.__setattr__(obj, "class_type", card.class_type)
            object.__setattr__(obj, "content_card_data", ContentCardData(card))
            object.__setattr__(obj, "_contentcards_controller", controller)
            out.append(obj)
        return out

    def __contains__(self, class_type: object) -> bool:
        return isinstance(class_type, str) and normalize_class_type(class_type) in self._factories

    def __len__(self) -> int:
        return len(self._factories)

    def __repr__(self) -> str:
        items = ", ".join(f"{k!r}: {v.__name__}" for k, v in self._factories.items())
        return f"Registry({{{items}}})"
