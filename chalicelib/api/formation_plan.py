"""Checking a template before anything is written, and the changes it would make.

:func:`prepare` refuses a bad template, bad parameters, a property the resource's create
route would refuse, and a literal id that names nothing in the project: each a 400, before
any write. :func:`plan` compares each declared resource with what exists today; the deploy
(:mod:`chalicelib.api.formation_deploy`) executes exactly that plan.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib import ids, secretbox
from chalicelib.api import formation_types as types
from chalicelib.api.auth import Caller
from chalicelib.domain.formations import Change, Diff, Formation, FormationResource
from chalicelib.formations.template import (
    Scope,
    Template,
    creation_order,
    parameter_values,
    parse_template,
    resolve,
)

WRITE_ONLY_PURPOSE = "formation-write-only"
PENDING = "(known after apply: {})"
MASK = "***"


@dataclass(frozen=True)
class Prepared:
    """A template that passed every check, with its parameter values and creation order."""

    raw: dict[str, Any]
    template: Template
    parameters: dict[str, str]
    order: list[str]

    def rtype(self, logical_id: str) -> types.ResourceType:
        decl = self.template.resources[logical_id]
        return types.resource_type(decl.type, f"template.resources.{logical_id}.type")

    def scope(self, physical: Mapping[str, str], pending: str = PENDING) -> Scope:
        """Expressions resolved against ``physical`` ids; a name not there yet is ``pending``."""
        return Scope(
            parameters=self.parameters,
            resources=frozenset(self.template.resources),
            physical=lambda name: physical.get(name) or pending.format(name),
        )

    def secrets(self) -> list[str]:
        return [
            value
            for name, value in self.parameters.items()
            if self.template.parameters[name].no_echo and value
        ]


def _placeholders(prepared_types: Mapping[str, types.ResourceType]) -> dict[str, str]:
    """An id-shaped stand-in per resource, so a create route's id fields accept a ``ref``."""
    return {
        name: f"{ids.PREFIXES[rtype.id_kind]}_0formation0pending0{index}"
        for index, (name, rtype) in enumerate(prepared_types.items())
    }


def prepare(raw: Mapping[str, Any], given: Mapping[str, Any] | None, acting: Caller) -> Prepared:
    """The checked template: 400 naming the field on the first problem, 403 on the first
    resource ``acting`` may not create, nothing written."""
    template = parse_template(raw)
    prepared = Prepared(
        raw=dict(raw),
        template=template,
        parameters=parameter_values(template, given),
        order=creation_order(template),
    )
    by_name = {name: prepared.rtype(name) for name in template.resources}
    stand_ins = _placeholders(by_name)
    scope = prepared.scope(stand_ins)
    for name, decl in template.resources.items():
        where = f"template.resources.{name}.properties"
        properties = resolve(decl.properties, scope, where)
        types.check_shape(by_name[name], properties, where)
        parent, _ = types.split_properties(by_name[name], properties, where)
        types.check_allowed(by_name[name], acting, parent)
        for field_name, kind, value in types.literal_ids(properties, where):
            if value not in stand_ins.values():
                types.check_reference(acting, field_name, kind, value)
    resolve(template.outputs, scope, "template.outputs")
    resolve(template.metadata, scope, "template.metadata")
    return prepared


def stored_template(prepared: Prepared) -> dict[str, Any]:
    """The template as a formation keeps and shows it: verbatim, but for secret literals
    (an agent's secret header, a webhook's secret), which are masked."""
    stored = copy.deepcopy(prepared.raw)
    for name, decl in stored.get("resources", {}).items():
        if isinstance(decl, dict) and isinstance(decl.get("properties"), dict):
            decl["properties"] = prepared.rtype(name).shown(decl["properties"])
    return stored


def write_only_hash(value: Any) -> str:
    return secretbox.keyed_hash(WRITE_ONLY_PURPOSE, json.dumps(value, sort_keys=True))


def covers(desired: Any, current: Any) -> bool:
    """Whether ``current`` already holds ``desired``: only declared keys are compared."""
    if isinstance(desired, dict):
        if desired == {} and current in (None, {}):
            return True
        return isinstance(current, dict) and all(
            covers(value, current.get(key)) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(desired) == len(current)
            and all(covers(d, c) for d, c in zip(desired, current, strict=True))
        )
    if desired is None:
        return current in (None, {}, [])
    return bool(desired == current)


def changed_properties(
    rtype: types.ResourceType,
    desired: Mapping[str, Any],
    current: Mapping[str, Any],
    record: FormationResource,
) -> list[str]:
    changed = []
    for key, value in desired.items():
        if key in rtype.secret:  # what reads show (masked), and the hash of what was applied
            shown = rtype.secret[key](value)
            readable = key not in current or covers(shown, current.get(key))
            same = readable and record.write_only.get(key) == write_only_hash(value)
        elif key == rtype.parent:
            same = value == record.parent_id
        else:
            same = covers(value, current.get(key))
        if not same:
            changed.append(key)
    return changed


def live_records(formation: Formation | None) -> dict[str, FormationResource]:
    """The formation's resources that stand (tombstones are history, not state)."""
    if formation is None:
        return {}
    return {r.logical_id: r for r in formation.resources if r.status != "deleted"}


def masked(value: Any, secrets: list[str]) -> Any:
    """``value`` with every ``no_echo`` parameter value replaced by ``***``."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: masked(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, secrets) for v in value]
    return value


def _create(name: str, rtype: types.ResourceType, shown: dict[str, Any]) -> Change:
    return Change(
        logical_id=name, resource_type=rtype.name, action="create", diff=Diff(desired=shown)
    )


def change_for(
    prepared: Prepared,
    name: str,
    record: FormationResource | None,
    physical: Mapping[str, str],
    acting: Caller,
) -> Change:
    """What deploying ``name`` would do, its properties resolved against ``physical``."""
    rtype = prepared.rtype(name)
    where = f"template.resources.{name}.properties"
    desired = resolve(prepared.template.resources[name].properties, prepared.scope(physical), where)
    shown = rtype.shown(masked(desired, prepared.secrets()))
    if record is None or record.resource_type != rtype.name or not record.physical_resource_id:
        return _create(name, rtype, shown)
    current = types.read(rtype, acting, record.parent_id, record.physical_resource_id)
    if current is None:  # removed outside the formation: it is created again
        return _create(name, rtype, shown)
    changed = changed_properties(rtype, desired, current, record)
    return Change(
        logical_id=name,
        resource_type=rtype.name,
        action="update" if changed else "unchanged",
        physical_resource_id=record.physical_resource_id,
        changed=changed,
        diff=Diff(desired=shown, current={k: current[k] for k in desired if k in current}),
    )


def plan(prepared: Prepared, formation: Formation | None, acting: Caller) -> list[Change]:
    """Every declared resource in creation order, then every standing one the template drops."""
    records = live_records(formation)
    physical = {k: r.physical_resource_id for k, r in records.items() if r.physical_resource_id}
    changes = [
        change_for(prepared, name, records.get(name), physical, acting) for name in prepared.order
    ]
    return changes + plan_removals(prepared, formation)


def plan_removals(prepared: Prepared, formation: Formation | None) -> list[Change]:
    """A ``delete`` for every standing resource the template no longer declares."""
    return [
        Change(
            logical_id=name,
            resource_type=record.resource_type,
            action="delete",
            physical_resource_id=record.physical_resource_id,
            diff=Diff(desired={}),
        )
        for name, record in live_records(formation).items()
        if name not in prepared.template.resources
    ]
