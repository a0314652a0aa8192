"""socium.experiments.opinions."""
