"""socium.reporting."""
