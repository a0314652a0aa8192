"""Cascades as data: the Twitter15 and CED readers, the one cascade row format, data-set names, curves."""
