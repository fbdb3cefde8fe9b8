"""The `remem-hook` executable: a process that lives for one payload.

It turns Python's cyclic garbage collector off before anything else is imported. Collections
during the imports alone cost the hook a twentieth of an interpreter start-up, and the process
ends (remem.hook.run) long before the little cyclic garbage it makes would matter: reference
counting frees the rest. remem.hook itself leaves the collector alone, for processes that
import it and live on.
"""

import gc

gc.disable()

from remem.hook import run  # noqa: E402  (imported with the collector off)

__all__ = ["run"]
