"""The forecast model: a cascade's replicas from its observed prefix, its predictive distribution, the baselines."""
