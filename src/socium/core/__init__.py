"""socium.core."""
