"""ANCHOR audit: persona retention and trajectory recall on long coding sessions."""
from .retention import DegenerateFacet, FacetRetention, facet_retention, retention

__all__ = ["retention", "facet_retention", "FacetRetention", "DegenerateFacet"]
