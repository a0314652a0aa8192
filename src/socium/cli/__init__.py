"""socium.cli."""
