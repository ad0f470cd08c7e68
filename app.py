"""Chalice entry point: create the app and register the blueprints. No logic here."""

from chalicelib.api.blueprints import BLUEPRINTS
from chalicelib.api.chalice_app import PawlChalice

app = PawlChalice(app_name="pawl")
for blueprint in BLUEPRINTS:
    app.register_blueprint(blueprint)
