"""pawl-slack-sink: a pawl event sink posting finished runs to a Slack incoming webhook.

pawl registers this package itself (the ``pawl`` entry point names ``pawl_slack_sink``),
so the ``@event_sink`` it re-exports below is what pawl finds.
"""

from pawl_slack_sink.message import format_message
from pawl_slack_sink.sink import DEFAULT_EVENTS, selected_events, slack

__all__ = ["DEFAULT_EVENTS", "format_message", "selected_events", "slack"]
__version__ = "0.1.0"
