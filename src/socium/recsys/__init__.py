"""socium.recsys."""
