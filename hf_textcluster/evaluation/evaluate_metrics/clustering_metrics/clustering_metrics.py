"""ACC / NMI / ARI / purity of a clustering as an ``evaluate`` metric.

Loaded offline from the installed package (no Hub): ``hf_textcluster.evaluation.metrics.load_clustering_metric()``,
which is
``evaluate.load(<this folder>)``. The scores are those of :func:`hf_textcluster.evaluation.metrics.clustering_scores`
(the same
functions, not a copy).
"""

import datasets
import evaluate

from hf_textcluster.evaluation.metrics import clustering_scores

_DESCRIPTION = """\
Clustering quality against gold classes: ACC (accuracy under the best one-to-one cluster-to-class matching, Hungarian
algorithm), NMI (normalised mutual information), ARI (adjusted Rand index) and purity. Cluster ids and class labels are
arbitrary: only which items share a cluster / a class matters, and the number of clusters may differ from the number of
classes (unmatched clusters count as errors in ACC).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int` or `str`): the predicted cluster id of each item.
    references (`list` of `int` or `str`): the gold class of each item.
Returns:
    acc (`float`), nmi (`float`), ari (`float`), purity (`float`): fractions (ARI may be negative).
Examples:
    >>> metric = evaluate.load("hf_textcluster/evaluate_metrics/clustering_metrics")
    >>> metric.compute(predictions=[1, 1, 0, 0], references=[0, 0, 1, 1])
    {'acc': 1.0, 'nmi': 1.0, 'ari': 1.0, 'purity': 1.0}
"""

_CITATION = """\
@article{zhang2021supporting,
  title={Supporting Clustering with Contrastive Learning},
  author={Zhang, Dejiao and Nan, Feng and Wei, Xiaokai and Li, Shang-Wen and Zhu, Henghui and McKeown, Kathleen and
          Nallapati, Ramesh and Arnold, Andrew O. and Xiang, Bing},
  journal={NAACL},
  year={2021}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClusteringMetrics(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # cluster ids and classes: integers or strings, in any combination
            features=[
                datasets.Features({"predictions": datasets.Value(p), "references": datasets.Value(r)})
                for p in ("int64", "string")
                for r in ("int64", "string")
            ],
        )

    def _compute(self, predictions, references):
        return clustering_scores(references, predictions)
