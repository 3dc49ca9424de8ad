"""Pipeline variants of the project file, for ``ragtui experiment``.

```toml
[variants]
baseline = "c512"          # the variant the others are compared against (default: the first)

[variants.c512]
chunk-size = 512

[variants.c256-no-windows]
chunk-size = 256
windows = "off"
```

A variant's table holds option keys (``ragtui.core.options``), each overriding the settings every
command would run with (the file's top level and the flags); a variant with no key is those
settings as they are. Options that decide which questions are asked and how they are judged
(``golden``, ``beir``, ``k``, ``threshold``, ``annotator``) cannot change between variants, or
the variants could not be compared question by question. Variant names become saved-run names, so
they hold only letters, digits, ``-``, ``_`` and ``.``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ragtui.core.data.paths import safe_filename
from ragtui.core.errors import InputError
from ragtui.core.options import OPTIONS, OptionError
from ragtui.core.settings import Settings, Variant

#: Options a variant cannot set: they fix the questions and how they are judged.
FIXED_OPTIONS = frozenset({"golden", "beir", "k", "threshold", "annotator"})
#: The key of ``[variants]`` that names the baseline.
BASELINE_KEY = "baseline"

_BY_KEY = {o.key: o for o in OPTIONS}


class SectionContext(Protocol):
    """What ``[variants]`` reads of the project file's section (``ragtui.core.project.SectionContext``):
    its name, for messages, and how a path in it is resolved. Named here, so that this module, below
    the project file's layer, never imports it."""

    @property
    def name(self) -> str:
        """The section's name (``variants``)."""
        ...

    def resolve(self, raw: str | Path) -> Path:
        """A path from the file, relative to the file's folder."""
        ...


def _value(key: str, raw: Any, context: SectionContext) -> Any:
    option = _BY_KEY[key]
    value = option.parse_file(raw)
    if isinstance(value, Path):
        return context.resolve(value)
    return value


def parse_variants(table: Mapping[str, Any], context: SectionContext) -> dict[str, Any]:
    """``[variants]``: ``baseline = NAME`` and one ``[variants.NAME]`` table each -> ``Settings.variants``."""
    variants: list[Variant] = []
    baseline: str | None = None
    for name, body in table.items():
        if name == BASELINE_KEY and not isinstance(body, dict):
            if not isinstance(body, str):
                raise OptionError(f"{BASELINE_KEY} must name a variant, got {body!r}")
            baseline = body
            continue
        if not isinstance(body, dict):
            raise OptionError(
                f"{name}: expected a table [{context.name}.{name}] of option keys "
                f"(or {BASELINE_KEY} = NAME)"
            )
        try:
            ok = safe_filename(name) == name
        except ValueError:
            ok = False
        if not ok:
            raise OptionError(
                f"{name!r}: a variant name may hold only letters, digits, '-', '_' and '.' (not first)"
            )
        overrides: list[tuple[str, Any]] = []
        for key, raw in body.items():
            if key not in _BY_KEY:
                known = ", ".join(
                    sorted(k for k in _BY_KEY if _BY_KEY[k].name not in FIXED_OPTIONS)
                )
                raise OptionError(f"{name}: unknown key {key!r} (known: {known})")
            option = _BY_KEY[key]
            if option.name in FIXED_OPTIONS:
                raise OptionError(
                    f"{name}: {key} cannot change between variants (it decides which questions "
                    "are asked and how they are judged); set it at the top level"
                )
            try:
                overrides.append((option.name, _value(key, raw, context)))
            except OptionError as exc:
                raise OptionError(f"{name}: {key}: {exc}") from None
        variants.append(Variant(name, tuple(overrides)))
    if not variants:
        raise OptionError(f"declare at least one variant: [{context.name}.NAME]")
    names = [v.name for v in variants]
    if baseline is not None and baseline not in names:
        raise OptionError(f"{BASELINE_KEY} {baseline!r} is not a variant ({', '.join(names)})")
    return {"variants": tuple(variants), "baseline_variant": baseline}


def baseline_of(settings: Settings) -> Variant:
    """The baseline variant: the one ``baseline`` names, else the first."""
    if not settings.variants:
        raise InputError(
            None, "no variants: declare [variants.NAME] tables in the project file (ragtui.toml)"
        )
    for variant in settings.variants:
        if variant.name == settings.baseline_variant:
            return variant
    return settings.variants[0]


def find_variant(settings: Settings, name: str) -> Variant:
    """The variant called ``name``; InputError naming the ones there are."""
    for variant in settings.variants:
        if variant.name == name:
            return variant
    known = ", ".join(v.name for v in settings.variants) or "none"
    raise InputError(None, f"no variant {name!r} (variants: {known})")


def variant_settings(settings: Settings, variant: Variant | str) -> Settings:
    """The settings a variant runs with: ``settings`` with the variant's keys set (what the app
    switches to when a person picks a variant)."""
    chosen = find_variant(settings, variant) if isinstance(variant, str) else variant
    return replace(settings, **dict(chosen.overrides))
