"""The event edge: SQS handlers and schedules. Decode the event, call the engine."""
