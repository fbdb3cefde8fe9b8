"""`remem ui`: a read-only local site of the home, served on 127.0.0.1 (a face, as remem.cli)."""
