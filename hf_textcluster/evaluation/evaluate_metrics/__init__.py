"""``evaluate`` modules shipped with the package (each folder holds a script ``evaluate.load(<folder>)`` reads; see
:func:`~hf_textcluster.evaluation.metrics.clustering_metric_path`)."""
