"""Capture: a host's hook payload -> a CapturedEvent (remem.record.event), stored with its
session's task in one short transaction, or spooled. The `remem-hook` process is remem.hook.

Everything under this package is stdlib only: the hook imports it.
"""
