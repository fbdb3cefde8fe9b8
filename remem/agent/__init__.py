"""What reaches an agent or a person: the one read model, and the one JSON contract."""
