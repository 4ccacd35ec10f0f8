"""Shared storage: the ``storage:`` section, the checkpoint planner (pure), the replacement guard."""
