"""X's published For You ranking as a recommender (``recsys.kind: foryou``); see ``recommender.py``."""

from socium.recsys.foryou.recommender import ForYouRecommender

__all__ = ["ForYouRecommender"]
