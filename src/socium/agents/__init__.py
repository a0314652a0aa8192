"""socium.agents."""
