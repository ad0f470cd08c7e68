"""Picking two runs to compare from the eval page: a GET form (no state change, so no CSRF
token) whose two radio groups name the run (``run``) and the run to compare it with
(``with``, blank: the run's own baseline). This route only checks the eval (read as the
signed-in key, so a foreign eval is the API's 404) and the choice, then sends the browser
to the compare page, which reads both runs and their comparison through the API.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from chalice import Response

from chalicelib.console import reads, responses
from chalicelib.console.visit import Visit, bp, html_errors, query_value, signed_in
from chalicelib.errors import ValidationFailed


def compare_location(eval_id: str, run_id: str | None, with_id: str | None) -> str:
    """The compare page of ``run_id`` against ``with_id`` (None: the run's baseline)."""
    if run_id is None:
        raise ValidationFailed("Pick the run to compare (the first column).", field="run")
    if with_id == run_id:
        raise ValidationFailed("Pick two different runs to compare.", field="with")
    path = f"/console/evals/{quote(eval_id, safe='')}/runs/{quote(run_id, safe='')}/compare"
    return path + (f"?{urlencode({'with': with_id})}" if with_id else "")


@bp.route("/console/evals/{eval_id}/compare", methods=["GET"])
@html_errors
@signed_in
def console_compare_pick(visit: Visit, eval_id: str) -> Response:
    reads.get(visit.caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)  # the API's 404
    location = compare_location(eval_id, query_value("run"), query_value("with"))
    return responses.redirect(location, [visit.cookie()])
