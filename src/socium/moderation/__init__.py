"""socium.moderation: interventions against misinformation that act through the platform.

Labels, removal, down-ranking and suspensions, chosen by pluggable strategies.
"""
