"""The peers benchmark's work as an Inspect task (run by ``bench/peers/run.py``, never
imported by pawl): N samples, a solver that POSTs each sample to the HTTP agent the way
pawl's ``http`` agent does, and Inspect's ``includes`` scorer (pawl's ``contains``).

    inspect eval bench/peers/inspect_task.py --model mockllm/model --max-samples 40 \\
        -T url=http://127.0.0.1:PORT/ -T items=1000
"""

from __future__ import annotations

import httpx
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import includes
from inspect_ai.solver import solver


@solver
def http_agent(url: str):
    client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=200))

    async def solve(state, generate):
        body = {"input": [{"role": "user", "content": state.input_text}]}
        response = await client.post(url, json=body)
        response.raise_for_status()
        state.output = ModelOutput.from_content(model="http", content=response.json()["output"])
        return state

    return solve


@task
def peers(url: str, items: int = 1000):
    samples = [Sample(input=f"case {n}: ok", target="ok") for n in range(int(items))]
    return Task(dataset=samples, solver=http_agent(url), scorer=includes())
