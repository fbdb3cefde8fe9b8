"""remem: procedural memory for coding agents.

Kept empty on purpose: `remem-hook` imports modules below this package on the agent's hot path,
and anything imported here would be paid on every tool call.
"""

__version__ = "0.1.0"
