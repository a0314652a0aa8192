"""socium.platform."""
