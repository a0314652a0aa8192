"""socium.testing."""
