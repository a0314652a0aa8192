"""socium.experiments."""
