"""What the user runs to keep a home: doctor, status, forget, init, the service, and the
hooks installed into each agent's settings."""
