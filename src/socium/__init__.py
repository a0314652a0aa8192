"""socium: simulator of societies of LLM agents."""

__version__ = "0.1.0"
