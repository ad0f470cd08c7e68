"""The demo's judge takes as many fresh connections at once as a run opens.

A run's worker threads each open their own connection to the judge at the same moment;
with the socket module's listen backlog of 5 some were reset and the demo's tone run
showed items errored with ``JUDGE_FAILED ... ReadError``.
"""

from __future__ import annotations

import threading

import httpx

from pawl.demo import judge

THREADS = 100  # more than a run opens, so the old backlog of 5 fails every time


def test_a_hundred_fresh_connections_at_once_are_all_answered() -> None:
    failures: list[str] = []
    answers: list[float] = []
    start = threading.Barrier(THREADS)
    with judge.demo_judge() as url:

        def call() -> None:
            start.wait()
            try:
                with httpx.Client(timeout=30) as client:
                    reply = client.post(
                        f"{url}/chat/completions",
                        json={"messages": [{"content": "Answer: thanks for asking"}]},
                    )
                    answers.append(reply.json()["usage"]["cost"])
            except httpx.HTTPError as exc:
                failures.append(repr(exc))

        threads = [threading.Thread(target=call) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert len(answers) == THREADS and all(cost > 0 for cost in answers)
