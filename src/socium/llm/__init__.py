"""socium.llm."""
