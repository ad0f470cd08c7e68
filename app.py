"""Chalice entry point: create the app and register the blueprints. No logic here."""

from chalicelib.api.blueprints import BLUEPRINTS
from chalicelib.api.chalice_app import PawlChalice

# configure_logs=False: Chalice would make the "pawl" logger stop propagating, hiding
# every pawl.* log from the root handler (Lambda's, or a test's).
app = PawlChalice(app_name="pawl", configure_logs=False)
for blueprint in BLUEPRINTS:
    app.register_blueprint(blueprint)
