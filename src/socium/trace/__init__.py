"""socium.trace."""
