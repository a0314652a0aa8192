"""socium.experiments.designs."""
