"""The extraction-task queue: every queue statement lives in this package."""
