"""pawl-slack-sink: a pawl event sink posting finished runs to a Slack incoming webhook.

pawl registers this package itself (the ``pawl`` entry point names ``pawl_slack_sink``),
so the ``@hookimpl`` it re-exports below is what pluggy finds.
"""

from pawl_slack_sink.message import format_message
from pawl_slack_sink.sink import DEFAULT_EVENTS, pawl_deliver_event, selected_events

__all__ = ["DEFAULT_EVENTS", "format_message", "pawl_deliver_event", "selected_events"]
__version__ = "0.1.0"
