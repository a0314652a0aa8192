"""socium.experiments.validation."""
