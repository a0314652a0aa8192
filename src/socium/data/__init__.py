"""socium.data."""
