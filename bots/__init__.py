"""Chat front ends over the gitmem service; :mod:`bots.slack` is the Slack one."""
