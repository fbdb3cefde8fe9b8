"""A team's memory on PostgreSQL (DESIGN.md §9): which projects are shared, and under what key.

Nothing here is imported by the hook: the hook only ever writes the local database.
"""
