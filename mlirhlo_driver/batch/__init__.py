"""Many modules at once: opt batches, the result cache, run's task list and report."""
