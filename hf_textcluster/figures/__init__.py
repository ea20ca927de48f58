"""Figures of a clustering from plain arrays: plotly figures (:mod:`~hf_textcluster.figures.clusters`: the report's
and ``Clusterer.visualize_*``'s) and the 2-D projections of embeddings (:mod:`~hf_textcluster.figures.projection`)."""
