"""Names where ids go (``pawl.cli.names``), against an embedded runtime over HTTP.

Two projects hold an eval of the same name: each key finds its own project's and never the
other's; two evals of one name in a project are refused naming both; an id goes through
as it is; ``--eval-run-id latest`` is the newest run; ``pawl run --eval NAME`` runs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pawl.cli import main as cli
from pawl.cli.names import NameNotResolved, find_named, resolve
from pawl.demo.cases import dataset_items, eval_scorers
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from pawl.transport import PawlClient

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Tenant:
    project_id: str
    key: str
    agent_id: str
    dataset_id: str
    eval_id: str
    #: Every eval the tenant made, in the order of its names.
    eval_ids: tuple[str, ...]


@dataclass(frozen=True)
class World:
    runtime: LocalRuntime
    ours: Tenant
    theirs: Tenant


def _tenant(runtime: LocalRuntime, project_name: str, eval_names: tuple[str, ...]) -> Tenant:
    with PawlClient(runtime.url, runtime.admin_key) as admin:
        project = admin.create_project(project_name)
        key = admin.create_api_key(project["id"], "ci")["key"]
    with PawlClient(runtime.url, key) as client:
        agent = client.create_agent(
            {
                "name": "support",
                "type": "python",
                "config": {"callable": "pawl.demo.agent:answer_v2"},
            }
        )
        dataset = client.create_dataset({"name": "support-faq"})
        client.add_item(dataset["id"], dataset_items()[0])
        evals = [
            client.create_eval(
                {
                    "name": name,
                    "agent_id": agent["id"],
                    "dataset_id": dataset["id"],
                    "scorers": eval_scorers(),
                }
            )
            for name in eval_names
        ]
    ids = tuple(str(e["id"]) for e in evals)
    return Tenant(project["id"], key, agent["id"], dataset["id"], ids[0], ids)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    config = RuntimeConfig(
        port=0,
        state_dir=tmp_path_factory.mktemp("cli-names-state"),
        snapshot_interval_s=0,
        run_schedules=False,
        python_agent_modules=("pawl.demo.agent",),
    )
    with LocalRuntime(config) as runtime:
        ours = _tenant(runtime, "names-ours", ("support-faq",))
        theirs = _tenant(runtime, "names-theirs", ("support-faq", "only-theirs"))
        yield World(runtime, ours, theirs)


def _pawl(world: World, key: str, *args: str) -> list[str]:
    return [*args, "--server", world.runtime.url, "--api-key", key, "--output", "json"]


def test_a_name_is_the_id_of_that_resource_in_the_keys_own_project(world: World) -> None:
    for tenant in (world.ours, world.theirs):
        with PawlClient(world.runtime.url, tenant.key) as client:
            assert resolve(client, "eval_id", "support-faq") == tenant.eval_id
            assert resolve(client, "agent_id", "support") == tenant.agent_id
            assert resolve(client, "dataset_id", "support-faq") == tenant.dataset_id
    assert world.ours.eval_id != world.theirs.eval_id


def test_another_projects_eval_is_not_found_by_its_name(world: World) -> None:
    missing = "no eval named 'only-theirs' in this project"
    with (
        PawlClient(world.runtime.url, world.ours.key) as client,
        pytest.raises(NameNotResolved, match=missing),
    ):
        resolve(client, "eval_id", "only-theirs")


def test_two_of_one_name_are_refused_naming_both(world: World) -> None:
    """API keys are the kind whose names a project may repeat (evals' are claimed)."""
    with PawlClient(world.runtime.url, world.runtime.admin_key) as admin:
        second = admin.create_api_key(world.ours.project_id, "ci")
        with pytest.raises(NameNotResolved) as refused:
            resolve(admin, "key_id", "ci", world.ours.project_id)
        listed = admin.send("GET", "/api/v1/api-keys", params={"project_id": world.ours.project_id})
    twins = [k["id"] for k in listed["data"] if k["name"] == "ci"]
    assert len(twins) == 2 and second["id"] in twins
    message = str(refused.value)
    assert message.startswith("2 API keys are named 'ci': ")
    assert all(f"{twin} (project {world.ours.project_id})" in message for twin in twins)
    assert message.endswith("give one's id instead")


def test_an_id_passes_through_without_a_request(world: World) -> None:
    # A closed port: a lookup would raise ServerUnreachable.
    with PawlClient("http://127.0.0.1:9", world.ours.key) as client:
        assert resolve(client, "eval_id", world.theirs.eval_id) == world.theirs.eval_id
        assert resolve(client, "eval_id", "eval_shapedlikeanid") == "eval_shapedlikeanid"


def test_an_admin_key_looks_names_up_in_the_project_it_names(world: World) -> None:
    with PawlClient(world.runtime.url, world.runtime.admin_key) as admin:
        project_id = resolve(admin, "project_id", "names-theirs")
        assert project_id == world.theirs.project_id
        assert find_named(admin, "eval", "support-faq", project_id) == world.theirs.eval_id
        with pytest.raises(NameNotResolved, match="project_id is required"):
            resolve(admin, "eval_id", "support-faq")  # no project: the list refuses


def test_the_commands_take_names_for_path_body_and_query_flags(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    def ok(*args: str, key: str = world.ours.key) -> Any:
        code = cli.main(_pawl(world, key, *args))
        captured = capsys.readouterr()
        assert code == 0, captured.err
        return json.loads(captured.out)

    assert ok("get-eval", "--eval", "support-faq")["id"] == world.ours.eval_id
    assert ok("get-agent", "--agent", "support")["id"] == world.ours.agent_id
    created = ok(
        "create-eval",
        "--name",
        "by-names",
        "--agent",
        "support",
        "--dataset",
        "support-faq",
        "--scorers",
        json.dumps(eval_scorers()),
    )
    assert (created["agent_id"], created["dataset_id"]) == (
        world.ours.agent_id,
        world.ours.dataset_id,
    )
    admin = world.runtime.admin_key
    listed = ok("list-evals", "--project-id", "names-theirs", key=admin)
    assert {e["id"] for e in listed["data"]} >= {world.theirs.eval_id}

    run = ok("start-eval-run", "--eval", "by-names", "--wait", "true")
    latest = ok("get-eval-run", "--eval", "by-names", "--eval-run-id", "latest")
    assert latest["id"] == run["id"] and latest["status"] == "completed"

    assert cli.main(_pawl(world, world.ours.key, "get-eval", "--eval", "only-theirs")) == 2
    assert "pawl get-eval: no eval named 'only-theirs' in this project" in capsys.readouterr().err


def test_pawl_run_takes_the_evals_name(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "--server", world.runtime.url, "--api-key", world.theirs.key, "--timeout", "60"]
    assert cli.main([*args, "--eval", "only-theirs"]) == 0
    assert f"eval {world.theirs.eval_ids[1]}, agent v1" in capsys.readouterr().out
    assert cli.main([*args, "--eval", "nothing-of-that-name"]) == 2
    assert "no eval named 'nothing-of-that-name' in this project" in capsys.readouterr().err


def test_get_eval_power_plans_the_eval_it_names(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _pawl(world, world.theirs.key, "get-eval-power", "--eval", "only-theirs")
    assert cli.main([*args, "--margin", "0.1", "--power", "0.9"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["eval_id"] == world.theirs.eval_ids[1]
    assert (plan["margin"], plan["margin_from"], plan["power"]) == (0.1, "query", 0.9)
    assert plan["dataset_item_count"] == 1 and plan["items_needed"] > 1
    assert plan["sides"] == "two-sided" and plan["explanation"]
    assert cli.main([*args, "--margin", "1.5"]) != 0  # the API's 400
    assert "margin" in capsys.readouterr().err
