"""socium.recsys: who sees what. The ``Recommender`` protocol (``observe``, ``feeds``), the built-in
feeds (chronological, random, reddit_hot, x, global, foryou), embeddings and the registry; see docs/recsys.md."""
