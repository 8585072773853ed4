"""What everything stands on: settings, extension singletons, the scope table, logs, metrics."""
