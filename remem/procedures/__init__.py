"""Procedures: trace rules, the pure promotion policy, persistence, and the promote handler."""
