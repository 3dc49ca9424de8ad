"""Building the live retrievers a setting asks for: specs, entry points named in ``--retrievers``, and Milvus."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES
from ragtui.core.retrieval.live_base import MILVUS_RETRIEVERS, LiveRetriever, LiveSpec
from ragtui.core.retrieval.rerank import RERANK_SUFFIX

__all__ = ["build_live_retrievers", "live_names"]


def live_names(
    retrievers: Sequence[str], specs: Sequence[LiveSpec], milvus: str | None
) -> list[str]:
    """The live retrievers a setting shows, in order: Milvus ones, entry points named in ``--retrievers``, then the specs.

    With ``--milvus`` and the default ``--retrievers`` the three Milvus retrievers are added. So
    are the project file's ``[retrievers.NAME]``: with any other ``--retrievers`` (or ``show``) only
    those it names are used, and the others are neither built nor asked. A ``--retriever
    NAME=SPEC`` from the command line is always used.
    """
    names: list[str] = []
    chosen = list(retrievers)
    default = tuple(chosen) == RETRIEVER_NAMES
    if milvus is not None and default:
        chosen += list(MILVUS_RETRIEVERS)
    for name in chosen:
        if name in MILVUS_RETRIEVERS and name not in names:
            names.append(name)
    for name in chosen:
        if (
            name not in RETRIEVER_NAMES
            and name not in MILVUS_RETRIEVERS
            and not name.endswith(RERANK_SUFFIX)  # the reranking stage's list, not a plugin
            and name not in names
        ):
            names.append(name)
    for spec in specs:
        if spec.from_project and not default and spec.name not in chosen:
            continue
        if spec.name not in names:
            names.append(spec.name)
    return names


def build_live_retrievers(
    retrievers: Sequence[str],
    specs: Sequence[LiveSpec],
    *,
    milvus: str | None,
    collection: str | None,
    milvus_fields: Sequence[tuple[str, str]],
    model: str,
    cache_root: Path | None,
    taken: Sequence[str] = (),
    allow_http: bool = False,
) -> dict[str, LiveRetriever]:
    """The live retrievers shown, built (nothing contacted and no plugin imported yet: a plugin's
    code first runs when it is asked); InputError on a bad spec or a plugin that does not exist.

    ``taken`` are the names already in use (external runs); a live retriever may not reuse one.
    An HTTP retriever with a credential (a header that carries one, a key in its URL) to a plain
    ``http://`` host other than this machine is refused unless ``allow_http`` (``--allow-http``).
    """
    by_name: dict[str, LiveSpec] = {}
    for spec in specs:
        if spec.name in by_name:
            raise InputError(None, f"{spec.source}: the name {spec.name!r} is given twice")
        if spec.name in taken:
            raise InputError(None, f"{spec.source}: the name {spec.name!r} is taken by a --run")
        by_name[spec.name] = spec
    out: dict[str, LiveRetriever] = {}
    for name in live_names(retrievers, specs, milvus):
        if name in MILVUS_RETRIEVERS and name not in by_name:
            if milvus is None or collection is None:
                raise InputError(
                    None, f"--retrievers: {name} needs --milvus URI and --collection NAME"
                )
            from ragtui.core.retrieval.milvus import MilvusRetriever, MilvusTarget

            target = MilvusTarget(milvus, collection, tuple(milvus_fields))
            out[name] = MilvusRetriever(
                name, name.removeprefix("milvus-"), target, model, cache_root
            )
            continue
        spec = by_name.get(name) or LiveSpec(name, "entry-point", name, {}, "--retrievers")
        if spec.kind == "http":
            from ragtui.core.retrieval.http import HttpRetriever

            retriever = HttpRetriever(spec)
            refusal = retriever.plain_http_refusal(allow_http)
            if refusal is not None:
                raise InputError(None, f"{spec.source}: retriever {name}: {refusal}")
            out[name] = retriever
        elif spec.kind in ("plugin", "entry-point"):
            from ragtui.core.retrieval.plugins import entry_point_names, load_plugin

            if spec.source == "--retrievers" and name not in entry_point_names():
                known = list(RETRIEVER_NAMES) + list(MILVUS_RETRIEVERS) + entry_point_names()
                raise InputError(
                    None,
                    f"--retrievers: unknown {name}; choose from {', '.join(known)}, or add one with --retriever NAME=SPEC",
                )
            out[name] = load_plugin(spec)
        else:
            raise InputError(None, f"{spec.source}: unknown kind {spec.kind!r}")
    if milvus is not None and collection is None:
        raise InputError(None, "--milvus needs --collection NAME")
    return out
