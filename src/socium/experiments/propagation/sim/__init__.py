"""The simulator's side: a cascade's population and run config, and the simulator checks of the forecast."""
