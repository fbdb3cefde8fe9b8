"""Database access: the one place connections are configured, the tables, the migrations.

Empty on purpose so that `remem.db.sqlite` can be imported by the hook without SQLAlchemy.
"""
