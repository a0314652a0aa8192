"""socium.simulator."""
